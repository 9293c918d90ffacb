"""The Host dialog: what to train, with whom and where to save it. Produces HostOptions."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtWidgets import (QAbstractSpinBox, QCheckBox, QComboBox, QDialog,
                               QDoubleSpinBox, QFileDialog, QFormLayout, QGroupBox,
                               QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox,
                               QVBoxLayout, QWidget)

from ..codec import CODECS, get_codec
from ..data import DATASETS, download, is_available, needs_download
from ..errors import ConfigError
from ..hub.outputs import OutputDir
from ..hub.presets import PRESETS, resolve
from ..models import MODELS
from ..service.options import HostOptions
from .download_dialog import Downloader, run_download

LABEL_WIDTH = 170
PRESET_LABELS = {"auto": "Automatic (measure the link)",
                 **{name: preset.label for name, preset in PRESETS.items()}}
UPDATE_LABELS = {"sync": "Synchronous rounds (every worker, every round)",
                 "async": "Asynchronous (apply each update as it arrives)"}
AGGREGATION_LABELS = {"mean": "Mean (trusted workers)",
                      "trimmed-mean": "Robust: clipped, trimmed mean",
                      "median": "Robust: clipped, coordinate median"}
AUTO_NOTE = ("Starts with lossless gradients, measures the first rounds, then picks Fast LAN, "
             "Wi-Fi or Slow link.")


def _spin(low: int, high: int, value: int, step: int = 1) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setSingleStep(step)
    spin.setValue(value)
    spin.setGroupSeparatorShown(True)
    _pad(spin)
    return spin


def _pad(spin: QAbstractSpinBox) -> None:
    # Qt ignores a style sheet's padding-left inside spin boxes; the line edit's margin works.
    line = spin.findChild(QLineEdit)
    if line is not None:
        line.setTextMargins(8, 0, 0, 0)


def _form(*rows: tuple[str, QWidget | QHBoxLayout]) -> QFormLayout:
    """A form whose labels share one width, so the fields of every group line up."""
    form = QFormLayout()
    for text, field in rows:
        label = QLabel(text)
        label.setMinimumWidth(LABEL_WIDTH)
        form.addRow(label, field)
    return form


def _combo(items: tuple[str, ...], current: str) -> QComboBox:
    combo = QComboBox()
    combo.addItems(list(items))
    if current in items:
        combo.setCurrentText(current)
    return combo


def dataset_labels() -> dict[str, str]:
    """Each dataset's name, marked when it must be downloaded first."""
    return {name: name + (" — download needed" if needs_download(name) else "")
            for name in DATASETS}


def _data_combo(labels: dict[str, str], current: str) -> QComboBox:
    """A combo box showing ``labels``' values, whose data are its keys."""
    combo = QComboBox()
    for name, label in labels.items():
        combo.addItem(label, name)
    combo.setCurrentIndex(max(0, combo.findData(current)))
    return combo


class HostDialog(QDialog):
    """Fields for every HostOptions value; Start validates through the core's own checks."""

    def __init__(self, initial: HostOptions, parent: QWidget | None = None,
                 downloader: Downloader = download) -> None:
        """``downloader(name, progress)``: fetches a dataset (a seam for tests)."""
        super().__init__(parent)
        self.setWindowTitle("Host a training session")
        self.setMinimumWidth(620)
        self._initial = initial
        self._downloader = downloader
        self.dataset = _data_combo(dataset_labels(), initial.dataset)
        self.dataset.setAccessibleName("Dataset")
        self.download_button = QPushButton("Download…")
        self.download_button.setToolTip("Fetch this dataset from the internet into the cache "
                                        "folder (once)")
        self.download_button.clicked.connect(self.download_dataset)
        self.dataset.currentIndexChanged.connect(self._dataset_changed)
        self.model = _combo(MODELS, initial.model)
        self.rounds = _spin(1, 1_000_000, initial.rounds, 100)
        self.batch_size = _spin(1, 4096, initial.batch_size, 8)
        self.lr = QDoubleSpinBox()
        self.lr.setDecimals(4)
        self.lr.setRange(0.0001, 10.0)
        self.lr.setSingleStep(0.005)
        self.lr.setValue(initial.lr)
        _pad(self.lr)
        self.eval_every = _spin(0, 1_000_000, initial.eval_every, 50)
        self.eval_every.setSpecialValueText("only at the end")
        self.workers = _spin(1, 256, initial.workers)
        self.updates = _data_combo(UPDATE_LABELS, initial.updates)
        self.updates.setToolTip("Synchronous rounds average every worker's gradient, so a "
                                "slow machine sets the pace. Asynchronous updates never wait: "
                                "a round is then one worker's batch, and older updates count "
                                "less.")
        self.max_staleness = _spin(0, 1024, initial.max_staleness)
        self.max_staleness.setToolTip("Asynchronous: an update computed on a model more than "
                                      "this many versions old is refused.")
        self.aggregation = _data_combo(AGGREGATION_LABELS, initial.aggregation)
        self.aggregation.setToolTip("Robust rules clip oversized updates and outvote one "
                                    "faulty or hostile worker per round (with 3 workers or "
                                    "more).")
        self.updates.currentIndexChanged.connect(self._updates_changed)
        self._updates_changed()
        self.train_here = QCheckBox("Also train on this machine")
        self.train_here.setChecked(initial.train_here)
        self.train_here.setToolTip("Runs a worker here too: it pairs with the PIN like any "
                                   "other and counts as one of the expected workers.")
        self.out_dir = QLineEdit(initial.out_dir)
        self.browse = QPushButton("Browse…")
        self.browse.clicked.connect(self._choose_folder)
        self.name = QLineEdit(initial.name)
        self.name.setPlaceholderText(initial.session_name() if not initial.name else "")
        self.port = _spin(0, 65533, initial.port)
        self.port.setGroupSeparatorShown(False)
        self.port.setSpecialValueText("any free port")
        self.preset = _data_combo(PRESET_LABELS, initial.preset)
        self.preset_note = QLabel()
        self.preset_note.setProperty("role", "muted")
        self.preset_note.setWordWrap(True)
        self.advanced = QGroupBox("Advanced: choose the codec and local steps yourself")
        self.advanced.setCheckable(True)
        self.advanced.setChecked(initial.advanced)
        self.codec = _combo(CODECS, initial.codec)
        self.codec.setToolTip("How gradients (or weight changes) and model updates travel. "
                              "raw and zstd are lossless; fp16, bf16, int8 and topk are lossy "
                              "with error feedback.")
        self.topk = QDoubleSpinBox()
        self.topk.setDecimals(3)
        self.topk.setRange(0.001, 1.0)
        self.topk.setSingleStep(0.005)
        self.topk.setValue(initial.topk)
        _pad(self.topk)
        self.local_steps = _spin(0, 1024, initial.local_steps)
        self.local_steps.setSpecialValueText("off (a gradient per round)")
        self.preset.currentIndexChanged.connect(self._preset_changed)
        self.codec.currentTextChanged.connect(self._codec_changed)
        if not initial.advanced:
            self._preset_changed()
        self._describe()
        self._codec_changed()
        self._dataset_changed()
        self.error = QLabel()
        self.error.setObjectName("Error")
        self.error.setWordWrap(True)
        self.error.hide()
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
        self._resume = False
        self.out_dir.textChanged.connect(self._folder_changed)
        self._build()
        self._folder_changed()

    def _build(self) -> None:
        dataset = QHBoxLayout()
        dataset.addWidget(self.dataset, 1)
        dataset.addWidget(self.download_button)
        training = _form(("Dataset", dataset), ("Model", self.model),
                         ("Rounds", self.rounds), ("Batch size per worker", self.batch_size),
                         ("Learning rate", self.lr), ("Evaluate every", self.eval_every),
                         ("Updates", self.updates), ("Staleness bound", self.max_staleness),
                         ("Aggregation", self.aggregation))
        folder = QHBoxLayout()
        folder.addWidget(self.out_dir, 1)
        folder.addWidget(self.browse)
        resume = QHBoxLayout()
        resume.addWidget(self.resume_note, 1)
        resume.addWidget(self.resume_button)
        people = _form(("Expected workers", self.workers), ("", self.train_here),
                       ("Output folder", folder), ("", resume))
        self.advanced.setLayout(_form(("Codec", self.codec), ("Top-k fraction", self.topk),
                                      ("Local steps", self.local_steps)))
        link = _form(("Network between machines", self.preset), ("", self.preset_note))
        link.addRow(self.advanced)
        network = _form(("Session name", self.name), ("Port", self.port))
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.start_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 14, 18, 14)
        title = QLabel("Host a training session")
        title.setObjectName("Title")
        hint = QLabel("Workers on your network join with the PIN shown next. Training starts "
                      "when the expected number of workers is ready.")
        hint.setObjectName("Subtitle")
        hint.setWordWrap(True)
        layout.addWidget(title)
        layout.addWidget(hint)
        for caption, form in (("Training", training), ("Workers and results", people),
                              ("Speed on your network", link), ("Network", network)):
            group = QGroupBox(caption)
            group.setLayout(form)
            layout.addWidget(group)
        layout.addWidget(self.error)
        layout.addLayout(buttons)

    def options(self) -> HostOptions:
        """The values as typed (not yet validated); a resume's come from its folder."""
        if self._resume:
            return dataclasses.replace(HostOptions.resuming(self.out_dir.text().strip()),
                                       train_here=self.train_here.isChecked(),
                                       port=self.port.value(), name=self.name.text().strip(),
                                       advertise=self._initial.advertise)
        return dataclasses.replace(
            self._initial, dataset=self.dataset.currentData(), model=self.model.currentText(),
            rounds=self.rounds.value(), batch_size=self.batch_size.value(),
            lr=round(self.lr.value(), 6), eval_every=self.eval_every.value(),
            workers=self.workers.value(), train_here=self.train_here.isChecked(),
            out_dir=self.out_dir.text().strip(), name=self.name.text().strip(),
            port=self.port.value(), preset=self.preset.currentData(),
            advanced=self.advanced.isChecked(), codec=self.codec.currentText(),
            topk=round(self.topk.value(), 6), local_steps=self.local_steps.value(),
            updates=self.updates.currentData(), max_staleness=self.max_staleness.value(),
            aggregation=self.aggregation.currentData())

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
            self.rounds.setValue(rounds * workers if asynchronous else max(1, rounds // workers))

    def _preset_changed(self) -> None:
        """Show what the chosen preset means in the advanced fields (unless overridden)."""
        self._describe()
        if self.advanced.isChecked():
            return
        _, mode = resolve(self.preset.currentData())
        self.codec.setCurrentText(mode.codec)
        self.topk.setValue(mode.topk)
        self.local_steps.setValue(mode.local_steps)

    def _describe(self) -> None:
        name = self.preset.currentData()
        self.preset_note.setText(PRESETS[name].summary.capitalize() + "." if name in PRESETS
                                 else AUTO_NOTE)

    def _codec_changed(self) -> None:
        self.topk.setEnabled(get_codec(self.codec.currentText()).sparse)

    def accept(self) -> None:
        """Start only with values the hub accepts and a dataset that is on this computer;
        otherwise say why and stay open."""
        options = self.options()
        try:
            options.config()
            options.output_path()
            if not is_available(options.dataset):
                raise ConfigError(f"{options.dataset} is not on this computer yet: click "
                                  "Download… (it needs the internet once), or choose "
                                  "mnist-sample, which is always there")
        except ConfigError as exc:
            self.error.setText(str(exc))
            self.error.show()
            return
        super().accept()

    def _dataset_changed(self) -> None:
        self.download_button.setVisible(needs_download(self.dataset.currentData()))

    def download_dataset(self) -> bool:
        """Download the chosen dataset with a progress dialog; True when it is here."""
        name = self.dataset.currentData()
        finished, error = run_download(name, self._downloader, self)
        if not finished:
            self.error.setText(f"The download of {name} goes on in the background; choose it "
                               "again once it is done.")
            self.error.show()
            return False
        return self._downloaded(name, error)

    def _downloaded(self, name: str, error: BaseException | None) -> bool:
        """Say why a download failed, or mark the set as here; True when it is."""
        if error is not None:
            self.error.setText(f"Could not download {name}: {error}")
            self.error.show()
            return False
        self._relabel()
        self.error.hide()
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
        self.resume_note.setVisible(resumable)
        self.resume_button.setVisible(resumable)

    def accept_resume(self) -> None:
        """Resume the session in the chosen folder."""
        self._resume = True
        try:
            self.options().output_path()
        except ConfigError as exc:
            self._resume = False
            self.error.setText(str(exc))
            self.error.show()
            return
        super().accept()

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Output folder", self.out_dir.text())
        if folder:
            self.out_dir.setText(folder)
