"""The Host dialog: what to train, with whom and where to save it. Produces HostOptions.

Its fields are the schema's (see ``schema`` and ``gui.fields``): each option with a dialog
label gets a widget in its group, with the option's range, labels and tool tip, and each
group a step (``gui.host_steps``: What to train, How, Who). Start validates through the same
checks as the command line; a message shows under the field it is about, on its step.
Start and Cancel stay at the bottom, in view, whatever step is shown; the dialog fits a
1280×720 screen (pages scroll where a screen is smaller still).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtCore import QSize
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDoubleSpinBox, QFileDialog,
                               QFormLayout, QGroupBox, QHBoxLayout, QInputDialog, QLabel,
                               QLayout, QLineEdit, QPushButton, QSpinBox, QVBoxLayout,
                               QWidget)

from .. import schema
from ..codec import get_codec
from ..data import DATASETS, download, is_available, needs_download
from ..data.prepared import PrepareCancelled
from ..errors import ConfigError, DatasetUnavailableError
from ..hub.config import MODE_OPTIONS, async_rounds
from ..hub.outputs import OutputDir
from ..hub.presets import PRESETS, resolve
from ..models.userfile import model_names
from ..service.options import HostOptions, host_plan, hosted_options
from ..service.precheck import NotReady, check_before_opening, needs_checking
from ..service.prepare import DataReport, needs_preparing
from ..text import sentence
from .busy import Busy, busy
from .data_preview import DATA_FIELDS, Background, DataPicker
from .download_dialog import Downloader, run_download
from .fields import Editor, editors
from .host_steps import (STEP_GROUPS, STEPS, WHAT, WHAT_CAPTION, Details, Steps,
                         message_label, named_field, step_of)
from .placement import available_geometry

LABEL_WIDTH = 170
AUTO_NOTE = ("Starts with lossless gradients, measures the first rounds, then picks Fast LAN, "
             "Wi-Fi or Slow link.")
FALLBACK = "mnist-sample"  # the dataset that is always on this computer
CHECKING = "Checking the model…"  # Start's text while the checks before opening run
Row = tuple[str, QWidget | QLayout, str]  # label, field, the option whose message goes under


def _form(rows: list[Row], messages: dict[str, QLabel]) -> QFormLayout:
    """A form whose labels share one width, so the fields of every group line up; a row
    without a widget label spans the form (a group box). Under each option's row, a hidden
    row for its message (``messages``)."""
    form = QFormLayout()
    for text, field, name in rows:
        if isinstance(field, QGroupBox):
            form.addRow(field)
            continue
        label = QLabel(text)
        label.setMinimumWidth(LABEL_WIDTH)
        form.addRow(label, field)
        if name and name not in messages:
            messages[name] = message = message_label()
            form.addRow(QLabel(), message)
            form.setRowVisible(message, False)
    return form


def _show_row(widget: QWidget, on: bool) -> None:
    """Show or hide a message line or a row's widget, with its form row (a hidden row
    takes no room)."""
    parent = widget.parentWidget()
    form = parent.layout() if parent is not None else None
    if isinstance(form, QFormLayout) and form.indexOf(widget) >= 0:
        form.setRowVisible(widget, on)
    widget.setVisible(on)


def _line(*widgets: QWidget, stretch: int = 0) -> QHBoxLayout:
    """``widgets`` side by side, the one at ``stretch`` taking the room."""
    line = QHBoxLayout()
    for index, widget in enumerate(widgets):
        line.addWidget(widget, 1 if index == stretch else 0)
    return line


def dataset_labels() -> dict[str, str]:
    """Each dataset's name, marked when it must be downloaded first."""
    return {name: name + (" — download needed" if needs_download(name) else "")
            for name in DATASETS}


class HostDialog(QDialog):
    """Fields for every HostOptions value; Start validates through the core's own checks."""

    # The fields this dialog's behaviour reads (every option's widget is an attribute too).
    dataset: QComboBox
    rounds: QSpinBox
    workers: QSpinBox
    updates: QComboBox
    max_staleness: QSpinBox
    train_here: QCheckBox
    out_dir: QLineEdit
    name: QLineEdit
    port: QSpinBox
    preset: QComboBox
    advanced: QGroupBox
    codec: QComboBox
    topk: QDoubleSpinBox
    model: QComboBox
    weights: QLineEdit

    def __init__(self, initial: HostOptions, parent: QWidget | None = None,
                 downloader: Downloader = download) -> None:
        """``downloader(name, progress)``: fetches a dataset (a seam for tests)."""
        super().__init__(parent)
        self.setWindowTitle("Host a training session")
        self._initial = initial
        self._downloader = downloader
        self.editors: dict[str, Editor] = editors(HostOptions, initial)
        for name, editor in self.editors.items():
            setattr(self, name, editor.widget)
        self.download_button = QPushButton("Download…")
        self.download_button.setToolTip("Fetch this dataset from the internet into the cache "
                                        "folder (once)")
        self.download_button.clicked.connect(self.download_dataset)
        policy = self.download_button.sizePolicy()  # its room kept: the dialog does not
        policy.setRetainSizeWhenHidden(True)  # widen when a set that needs it is chosen
        self.download_button.setSizePolicy(policy)
        self.dataset.currentIndexChanged.connect(self._dataset_changed)
        self.updates.currentIndexChanged.connect(self._updates_changed)
        self._updates_changed()
        self.browse = QPushButton("Browse…")
        self.browse.clicked.connect(self._choose_folder)
        self.model_browse = QPushButton("File…")
        self.model_browse.setToolTip("Your own model: a Python file (then pick the class or "
                                     "function in it) or a torch.export program (.pt2)")
        self.model_browse.clicked.connect(self._choose_model_file)
        self.weights_browse = QPushButton("File…")
        self.weights_browse.setToolTip("Starting weights: a state_dict saved with torch.save "
                                       "(.pth, .pt) or safetensors")
        self.weights_browse.clicked.connect(self._choose_weights_file)
        self.data = DataPicker(self, self.editors)  # Folder…, File… and the preview panel
        self.data_panel = self.data.panel
        self.name.setPlaceholderText(initial.session_name())
        self.dataset.currentTextChanged.connect(self._name_placeholder)
        self.preset_note = QLabel()
        self.preset_note.setProperty("role", "muted")
        self.preset_note.setWordWrap(True)
        self.preset.currentIndexChanged.connect(self._preset_changed)
        self.codec.currentTextChanged.connect(self._codec_changed)
        if not initial.advanced:
            self._preset_changed()
        self._describe()
        self._codec_changed()
        self._relabel()
        self.message = message_label()  # what names no field: beside the buttons
        self.messages: dict[str, QLabel] = {}  # each option's, under its field
        self._shown = self.message
        self.steps = Steps()
        self.next_button = QPushButton("Next ›")
        self.next_button.setToolTip("The next step (Start hosting works from any step)")
        self.next_button.clicked.connect(self.next_step)
        self.start_button = QPushButton("Start hosting")
        self.start_button.setObjectName("Primary")
        self.start_button.setDefault(True)
        self.start_button.clicked.connect(self.accept)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.reject)
        self.resume_note = QLabel()
        self.resume_note.setWordWrap(True)
        self.resume_button = QPushButton("Resume it")
        self.resume_button.setToolTip("Continue that session from its last checkpoint, with "
                                      "its own settings")
        self.resume_button.clicked.connect(self.accept_resume)
        self.resume_row = QWidget()  # the note and the button (a row only when resumable)
        self.model_details = Details()  # a model's technical lines, under its message
        self._checks = Background(self, self._checked, name="cs-check")
        self._checking: HostOptions | None = None  # what the checks under way were given
        self._busy: Busy | None = None
        self._resume = False
        self.out_dir.textChanged.connect(self._folder_changed)
        self._build()
        _show_row(self.model_details, False)
        self._folder_changed()
        self._sized = False
        self.resize(self._fitting_size())

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's API
        """On the first show: every step measured, the dialog sized to fit the screen."""
        super().showEvent(event)
        if not self._sized:
            self._sized = True
            self.steps.show_every_page()
            self.resize(self._fitting_size())

    @property
    def error(self) -> QLabel:
        """The message line that shows the latest message (under its field, or beside the
        buttons)."""
        return self._shown

    def _rows(self, names: list[str]) -> list[Row]:
        """The form rows of the options ``names``, in the schema's order."""
        rows: list[Row] = []
        for name in names:
            option, widget = self.editors[name].option, self.editors[name].widget
            if option.section:
                widget.setLayout(_form(self._rows(self._in_group(option.section)),
                                       self.messages))
                rows.append(("", widget, ""))
            elif name in DATA_FIELDS:
                self.data_panel.add_field(name, option.label, widget)
            elif name == "dataset":
                rows.append((option.label, _line(widget, self.data.folder_button,
                                                 self.data.file_button,
                                                 self.download_button), name))
            elif name == "model":
                rows += [(option.label, _line(widget, self.model_browse), name),
                         ("", self.model_details, "")]
            elif name == "weights":
                rows.append((option.label, _line(widget, self.weights_browse), name))
            elif name == "out_dir":
                resume = _line(self.resume_note, self.resume_button)
                resume.setContentsMargins(0, 0, 0, 0)
                self.resume_row.setLayout(resume)
                rows += [(option.label, _line(widget, self.browse), name),
                         ("", self.resume_row, "")]
            elif name == "preset":
                rows += [(option.label, widget, ""), ("", self.preset_note, name)]
            else:
                rows.append(("" if isinstance(widget, QCheckBox) else option.label, widget,
                             name))
        return rows

    def _in_group(self, group: str) -> list[str]:
        return [name for name, e in self.editors.items() if e.option.group == group]

    def _boxes(self) -> dict[str, dict[str, list[str]]]:
        """Each step's groups (those STEP_GROUPS names first) and their options."""
        sections = {e.option.section for e in self.editors.values() if e.option.section}
        steps: dict[str, dict[str, list[str]]] = {
            step: {g: [] for column in STEP_GROUPS[step] for g in column} for step in STEPS}
        for name, editor in self.editors.items():
            group = editor.option.group
            if group not in sections:  # a section's options are inside its box
                steps[step_of(name, editor.option)].setdefault(group, []).append(name)
        return steps

    def _build(self) -> None:
        self.message.setMinimumWidth(LABEL_WIDTH)
        buttons = QHBoxLayout()
        buttons.addWidget(self.message, 1)
        buttons.addStretch(0)  # the room, while there is no message
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.next_button)
        buttons.addWidget(self.start_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 12, 18, 12)
        hint = QLabel("Workers on your network join with the PIN shown next. Training starts "
                      "when the expected number of workers is ready.")
        hint.setObjectName("Subtitle")
        hint.setWordWrap(True)
        layout.addWidget(hint)
        for step, groups in self._boxes().items():
            self.steps.add_step(step, len(STEP_GROUPS[step]) or 1,
                                self._data_side() if step == WHAT else None)
            for group, names in groups.items():
                if not names:
                    continue
                caption = WHAT_CAPTION if step == WHAT else schema.GROUPS.get(group, "More")
                box = QGroupBox(caption)
                box.setLayout(_form(self._rows(names), self.messages))
                self.steps.place(step, group, box)
        self.steps.finish()  # (its pages are as wide as their fields: nothing is clipped)
        self.steps.currentChanged.connect(self._step_changed)
        layout.addWidget(self.steps, 1)
        layout.addLayout(buttons)
        self._step_changed()

    def _data_side(self) -> QWidget:
        """The data panel, or what it is for while it is hidden."""
        side = QWidget()
        column = QVBoxLayout(side)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.data_panel)
        column.addWidget(self.data_panel.placeholder)
        column.addStretch(1)
        return side

    def _fitting_size(self) -> QSize:
        """Room for the tallest step without a scroll bar, within the screen."""
        area = available_geometry(self.parentWidget())
        return self.sizeHint().boundedTo(QSize(area.width() - 40, area.height() - 80))

    def next_step(self) -> None:
        """Show the next step."""
        self.steps.setCurrentIndex(min(self.steps.count() - 1, self.steps.currentIndex() + 1))

    def _step_changed(self) -> None:
        self.next_button.setVisible(self.steps.currentIndex() < self.steps.count() - 1)

    def show_field(self, widget: QWidget) -> None:
        """Show the step that holds ``widget``, scrolled so that it is in view."""
        self.steps.show_widget(widget)

    def field_of(self, error: str) -> str | None:
        """The option an error is about: the first whose own checks fail, else the one its
        text names (None: none)."""
        for name, editor in self.editors.items():
            try:
                if not editor.option.accepts(editor.value()):
                    return name
            except ConfigError:
                return name
        return named_field(error, ((n, e.option.label) for n, e in self.editors.items()))

    def options(self) -> HostOptions:
        """The values as typed (not yet validated); a resume's come from its folder."""
        if self._resume:
            return dataclasses.replace(HostOptions.resuming(self.out_dir.text().strip()),
                                       train_here=self.train_here.isChecked(),
                                       port=self.port.value(), name=self.name.text().strip(),
                                       advertise=self._initial.advertise)
        return dataclasses.replace(self._initial, **{name: editor.value() for name, editor
                                                     in self.editors.items()})

    def _updates_changed(self) -> None:
        """An async round is one worker's batch: keep the data trained the same by scaling
        the rounds with the workers when the mode changes."""
        asynchronous = self.updates.currentData() == "async"
        self.max_staleness.setEnabled(asynchronous)
        previous = getattr(self, "_asynchronous", asynchronous)
        self._asynchronous = asynchronous
        if asynchronous != previous:
            workers = max(1, self.workers.value())
            rounds = self.rounds.value()
            self.rounds.setValue(async_rounds({"updates": "async", "workers": workers}, rounds)
                                 if asynchronous else max(1, rounds // workers))

    def _preset_changed(self) -> None:
        """Show what the chosen preset means in the advanced fields (unless overridden)."""
        self._describe()
        if self.advanced.isChecked():
            return
        _, mode = resolve(self.preset.currentData())
        for name in MODE_OPTIONS:
            self.editors[name].set_value(getattr(mode, name))

    def _describe(self) -> None:
        name = self.preset.currentData()
        self.preset_note.setText(sentence(PRESETS[name].summary) if name in PRESETS
                                 else AUTO_NOTE)

    def _codec_changed(self) -> None:
        self.topk.setEnabled(get_codec(self.codec.currentText()).sparse)

    def accept(self) -> None:
        """Start only with values the hub accepts and a dataset that is on this computer;
        otherwise say why and stay open."""
        options = self.options()
        try:
            options.config()
        except ConfigError as exc:
            self._say(str(exc), self.field_of(str(exc)))
            return
        try:
            options.output_path()
        except ConfigError as exc:
            self._say(str(exc), "out_dir")
            return
        if options.dataset in DATASETS and not self._on_this_computer(options.dataset):
            self._say(f"{options.dataset} is not on this computer yet: click Download… (it "
                      f"needs the internet once), or choose {FALLBACK}, which is always "
                      "there", "dataset")
            self.download_button.setFocus()  # Enter again downloads it
            return
        if needs_preparing(options.dataset):  # images or a table first: a bar and Cancel
            if not self.data_panel.preparing:
                self.start_button.setEnabled(False)
                self.data_panel.prepare(options.dataset, image_size=options.image_size,
                                        test_fraction=options.test_fraction,
                                        test_spec=options.test_data,
                                        label=options.label_column, input=options.input,
                                        done=self._prepared)
            return
        self._check(options)

    def _check(self, options: HostOptions) -> None:
        """What the session checks before it opens (the folder, the data, the model's
        export and the workers' contract), on a thread while the dialog stays open and
        Start reads "Checking the model…"; ``_checked`` opens it or says why not."""
        if self._checking is not None:
            return
        if not needs_checking(options.config()):  # a built-in by name: nothing left to check
            super().accept()
            return
        self._checking = options
        self._busy = Busy(self.start_button, CHECKING)
        plan = host_plan(options)
        self._checks.run(lambda _report: check_before_opening(plan))

    def _checked(self, result: NotReady | BaseException | None) -> None:
        """Open the session when its checks passed (checked again if a field changed
        meanwhile); else say why under the field to fix, and stay open."""
        checked, self._checking = self._checking, None
        if self._busy is not None:
            self._busy.end()
            self._busy = None
        if isinstance(result, NotReady):
            self._not_ready(result)
        elif isinstance(result, BaseException):
            self._say(f"Could not check the session before opening it: {result}")
        elif not self.isVisible():
            return
        elif checked != self.options():
            self.accept()
        else:
            super().accept()

    def _not_ready(self, result: NotReady) -> None:
        """The failure under its field, the way out named by this dialog's own control,
        the technical lines behind Details (a model's)."""
        text = result.text
        if result.code_would_help:
            text += (f" As a last resort, tick “{self.editors['offer_code'].option.label}” "
                     "below: workers then get the file itself, and each runs it only once "
                     "its person approves it.")
        self._say(text, result.field)
        if result.field == "model" and result.details:
            self.model_details.set_text(result.details)
            _show_row(self.model_details, True)

    def _on_this_computer(self, name: str) -> bool:
        """Whether a built-in dataset is here: a quick look first (one that is not is said
        at once), then loaded (torchvision and the files: seconds, kept for the session)
        while Start reads "Preparing…" under a busy cursor."""
        if needs_download(name):
            return False
        with busy(self.start_button, "Preparing…"):
            return is_available(name)

    def _prepared(self, report: DataReport | None, error: BaseException | None) -> None:
        """Open the session once its data is in the cache; after Cancel or an error,
        say so and stay open (nothing was cached)."""
        self.start_button.setEnabled(True)
        if isinstance(error, PrepareCancelled):
            self._say("Preparing the data was cancelled; nothing was kept.", "dataset")
        elif error is not None:
            self._say(str(error), "dataset")
        elif self.isVisible():
            self._check(self.options())

    def reject(self) -> None:
        """Close; a preparation under way stops, the checks' result is dropped."""
        self.data_panel.cancel()
        self._checks.forget()
        self._checking = None
        if self._busy is not None:
            self._busy.end()
            self._busy = None
        super().reject()

    def wait_checks(self, timeout_s: float) -> bool:
        """Wait for the checks' thread (tests, closing); True when it has ended."""
        return self._checks.wait(timeout_s)

    def _name_placeholder(self) -> None:
        """The name the session gets when Session name is left empty: it follows the data
        chosen (a folder's name, not the set the dialog opened with)."""
        data = self.editors["dataset"].value()
        self.name.setPlaceholderText(dataclasses.replace(self._initial, name="",
                                                         dataset=data).session_name())

    def _dataset_changed(self) -> None:
        name = self.dataset.currentData()  # None: a folder's path typed in
        self.download_button.setVisible(name in DATASETS and needs_download(name))

    def download_dataset(self) -> bool:
        """Download the chosen dataset with a progress dialog; True when it is here."""
        name = self.dataset.currentData()
        finished, error = run_download(name, self._downloader, self)
        if not finished:
            self._say(f"The download of {name} goes on in the background; choose it "
                      "again once it is done.", "dataset")
            return False
        return self._downloaded(name, error)

    def _downloaded(self, name: str, error: BaseException | None) -> bool:
        """Say why a download failed, or mark the set as here; True when it is."""
        if error is not None:
            self._say(download_failed(name, error), "dataset")
            return False
        self._relabel()
        self._hide_messages()
        return True

    def _relabel(self) -> None:
        """Mark again which datasets need a download."""
        for index, (name, label) in enumerate(dataset_labels().items()):
            if self.dataset.itemData(index) == name:
                self.dataset.setItemText(index, label)
        self._dataset_changed()

    def _folder_changed(self) -> None:
        """Offer to resume when the chosen folder holds a stopped session."""
        text = self.out_dir.text().strip()
        summary = OutputDir(Path(text).expanduser()).summary() if text else None
        resumable = summary is not None and summary["resumable"]
        if resumable:
            assert summary is not None
            c = summary["config"]
            self.resume_note.setText(f"This folder holds a stopped session ({c['model']} on "
                                     f"{c['dataset']}, round {summary['version']:,} of "
                                     f"{c['rounds']:,}).")
            for name, value in hosted_options(summary["host"]).items():  # Resume's own
                if name in self.editors:  # its name, port, local worker: in their fields
                    self.editors[name].set_value(value)
        _show_row(self.resume_row, resumable)

    def accept_resume(self) -> None:
        """Resume the session in the chosen folder."""
        self._resume = True
        try:
            self.options().output_path()
        except ConfigError as exc:
            self._resume = False
            self._say(str(exc), "out_dir")
            return
        super().accept()

    def _choose_model_file(self) -> None:
        """A .pt2 program as it is; a Python file with the class or function to build,
        read from the file's syntax (nothing in it runs here), asked when it has several."""
        path, _ = QFileDialog.getOpenFileName(
            self, "Your model", str(Path.home()),
            "Models (*.py *.pt2);;Python files (*.py);;torch.export programs (*.pt2)")
        if not path:
            return
        if path.endswith(".py"):
            try:
                names = model_names(Path(path))
            except ConfigError as exc:
                self._say(str(exc), "model")
                return
            if not names:
                self._say(f"{Path(path).name} defines no nn.Module class or function",
                          "model")
                return
            name, ok = (names[0], True) if len(names) == 1 else QInputDialog.getItem(
                self, "Which model?", f"{Path(path).name} defines these; which is the "
                "model to train?", names, 0, False)
            if not ok:
                return
            path = f"{path}:{name}"
        self.model.setEditText(path)
        self._hide_messages()

    def _choose_weights_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Starting weights", str(Path.home()),
            "Weights (*.pth *.pt *.safetensors);;All files (*)")
        if path:
            self.weights.setText(path)

    def _say(self, text: str, field: str | None = None) -> None:
        """Show ``text`` under ``field``'s row (a data option's: under the dataset's) on its
        step, scrolled into view; beside the buttons when it names no field."""
        self._hide_messages()
        if field in DATA_FIELDS:
            field = "dataset"
        label = self.messages.get(field or "", self.message)
        label.setText(text)
        _show_row(label, True)
        self._shown = label
        if label is not self.message:
            step = self.steps.step_of_widget(label)
            layout = self.steps.pages[step].layout() if step is not None else None
            if layout is not None:
                layout.activate()  # the message's row has its place before scrolling there
            widget = self.editors[field].widget if field in self.editors else label
            self.show_field(widget)
            self.show_field(label)  # the field and, below it, its message
            widget.setFocus()  # the field to fix

    def _hide_messages(self) -> None:
        for label in (self.message, *self.messages.values(), self.model_details):
            _show_row(label, False)

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Output folder", self.out_dir.text())
        if folder:
            self.out_dir.setText(folder)


def download_failed(name: str, error: BaseException) -> str:
    """Why a download failed, and what to do in this dialog (not the command line's flags)."""
    reason = ("the internet could not be reached" if isinstance(error, DatasetUnavailableError)
              else str(error).split(": connect once")[0])
    return (f"Could not download {name}: {reason}. Check the connection and click "
            f"Download… again, or choose {FALLBACK} in Dataset: it is always on this "
            "computer.")
