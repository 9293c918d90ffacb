"""The Host dialog's data panel: what a chosen folder or table holds, before the session
opens (``data.preview``), and the preparation of a folder's images with a bar and Cancel
(``service.prepare``).

Both run on a thread of their own: the panel only shows what they send back, polled by a
timer on the GUI thread, so a folder of 100k images never freezes the dialog. A result
that arrives after the person chose something else is dropped (each run has a serial).
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout,
                               QGridLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit,
                               QProgressBar, QPushButton, QSpinBox, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from ..data.preview import (HUGGING_FACE, IMAGES, TABLE, THUMB_SIDE, THUMBNAILS, Preview,
                            Thumbnail, preview, spec_kind)
from ..data.folders import own_split
from ..data.prepared import PrepareProgress
from ..service.prepare import DataReport, prepare
from ..service.threads import drain_queue
from .fields import Editor

PANEL_WIDTH = 340
POLL_MS = 50
ROW_BUTTON = "QPushButton { padding-top: 5px; padding-bottom: 5px; }"
PREVIEW_DELAY_MS = 300  # a path typed into the dataset field: previewed once typing stops
SHOWN_CLASSES = 12  # more are summed up as "and N more"
KIND_NAMES = {IMAGES: "image folder", TABLE: "table", HUGGING_FACE: "Hugging Face dataset"}
DATA_FIELDS = ("image_size", "test_fraction", "label_column")  # options shown in this panel
TABLE_FIELDS = frozenset({"label_column"})  # a table's or saved dataset's; the others images'
OWN_SPLIT = ("This folder has its own train/ and test/: its test/ images test, so no "
             "fraction is held out.")
PLACEHOLDER = ("Your own data? Folder… takes images, one folder per class; File… a table "
               "(.csv or .parquet). What it holds shows here before the session opens: its "
               "classes, a few images or rows, the size it trains at.")


class Background(QObject):
    """Runs one job at a time on a thread; its result (or exception) and its progress
    reports come back to ``done`` and ``progress`` on the GUI thread."""

    def __init__(self, parent: QObject, done: Callable[[Any], None],
                 progress: Callable[[Any], None] | None = None, name: str = "cs-data") -> None:
        super().__init__(parent)
        self._done, self._progress, self._name = done, progress, name
        self._results: queue.SimpleQueue[tuple[int, bool, Any]] = queue.SimpleQueue()
        self._serial = 0
        self._threads: list[threading.Thread] = []
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._poll)

    def run(self, job: Callable[[Callable[[Any], None]], Any]) -> None:
        """Start ``job(report)`` (a newer run makes an older one's result stale)."""
        self._serial += 1
        serial, results = self._serial, self._results

        def work() -> None:
            try:
                result: Any = job(lambda item: results.put((serial, False, item)))
            except Exception as exc:  # shown by ``done``, on the GUI thread
                result = exc
            results.put((serial, True, result))

        self._threads = [t for t in self._threads if t.is_alive()]
        thread = threading.Thread(target=work, name=self._name, daemon=True)
        self._threads.append(thread)
        thread.start()
        self._timer.start()

    def forget(self) -> None:
        """Drop what the running job will send."""
        self._serial += 1
        self._timer.stop()

    def wait(self, timeout_s: float) -> bool:
        """Wait for every job's thread; True when none is left (tests, closing)."""
        for thread in self._threads:
            thread.join(timeout_s)
        return not any(t.is_alive() for t in self._threads)

    def _poll(self) -> None:
        latest = None
        for serial, final, item in drain_queue(self._results):
            if serial != self._serial:
                continue
            if final:
                self._timer.stop()
                self._done(item)
                return
            latest = item
        if latest is not None and self._progress is not None:
            self._progress(latest)  # older reports waiting in the queue are stale


def _label(role: str = "", wrap: bool = True) -> QLabel:
    label = QLabel()
    label.setWordWrap(wrap)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if role:
        label.setProperty("role", role)
    return label


def _pixmap(thumb: Thumbnail) -> QPixmap:
    """The thumbnail filling its square, its aspect kept (small images scaled up sharp)."""
    pixels = thumb.pixels
    height, width = pixels.shape[:2]
    image = QImage(pixels.tobytes(), width, height, 3 * width, QImage.Format.Format_RGB888)
    return QPixmap.fromImage(image.copy()).scaled(  # copy: the bytes above are temporary
        THUMB_SIDE, THUMB_SIDE, Qt.AspectRatioMode.KeepAspectRatio,
        Qt.TransformationMode.FastTransformation)


def _first_up(line: str) -> str:
    return line[:1].upper() + line[1:]


def class_text(classes: tuple[tuple[str, int], ...], shown: int = SHOWN_CLASSES) -> str:
    """``cat 120 · dog 98 · … and 3 more``."""
    text = " · ".join(f"{name} {count:,}" for name, count in classes[:shown])
    return text + (f" · … and {len(classes) - shown:,} more" if len(classes) > shown else "")


class DataPanel(QGroupBox):
    """A preview of the dataset spec, the data options, and a folder's preparation."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Your data", parent)
        self.setFixedWidth(PANEL_WIDTH)
        self.spec = ""
        self.shown: Preview | None = None
        self.report: DataReport | None = None  # the last preparation's
        self._cancel = threading.Event()
        self._prepared: Callable[[DataReport | None, BaseException | None], None] | None = None
        self.previews = Background(self, self._show, name="cs-data-preview")
        self.preparation = Background(self, self._finished, self._progressed,
                                      name="cs-data-prepare")
        self.heading = _label()
        self.heading.setObjectName("SectionTitle")
        self.summary = _label("muted")
        self.classes = _label()
        self.thumbs = [QLabel() for _ in range(THUMBNAILS)]
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setMaximumHeight(170)
        self.train_size = _label()
        self.notes = _label("muted")
        self.skipped = _label("error")
        self.fields = QFormLayout()
        self._field_rows: dict[str, QWidget] = {}
        self.bar = QProgressBar()
        self.bar_text = _label("muted")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop preparing the images (nothing is kept)")
        self.cancel_button.clicked.connect(self.cancel)
        self.placeholder = _label("muted")  # where the panel shows, while it does not
        self.placeholder.setText(PLACEHOLDER)
        self.placeholder.setFixedWidth(PANEL_WIDTH)
        self.placeholder.setContentsMargins(12, 24, 12, 0)
        self._build()
        self.set_preparing(False)
        self.hide()

    def _build(self) -> None:
        grid = QGridLayout()
        grid.setSpacing(4)
        for index, thumb in enumerate(self.thumbs):
            thumb.setFixedSize(THUMB_SIDE, THUMB_SIDE)
            thumb.setAlignment(Qt.AlignmentFlag.AlignCenter)
            grid.addWidget(thumb, index // 4, index % 4)
        self.thumb_grid = QWidget()
        self.thumb_grid.setLayout(grid)
        bar = QHBoxLayout()
        bar.addWidget(self.bar, 1)
        bar.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        for widget in (self.heading, self.summary, self.classes, self.thumb_grid, self.table,
                       self.train_size, self.notes, self.skipped):
            layout.addWidget(widget)
        layout.addLayout(self.fields)
        layout.addStretch(1)
        layout.addWidget(self.bar_text)
        layout.addLayout(bar)

    def add_field(self, name: str, label: str, widget: QWidget) -> None:
        """Show a data option's field (see DATA_FIELDS) in the panel's form."""
        self.fields.addRow(label, widget)
        self._field_rows[name] = widget
        if name == "test_fraction":  # why it is off, under it, for a folder with test/
            self._tip = widget.toolTip()
            self.split_note = _label("muted")
            self.split_note.setText(OWN_SPLIT)
            self.fields.addRow("", self.split_note)
            self.fields.setRowVisible(self.split_note, False)

    def set_own_split(self, on: bool) -> None:
        """A folder with its own test/ (``on``): Test fraction off, the reason under it."""
        field = self._field_rows.get("test_fraction")
        if field is None:
            return
        field.setEnabled(not on)
        field.setToolTip(OWN_SPLIT if on else self._tip)
        self.fields.setRowVisible(self.split_note, on)

    # ------------------------------------------------------------------ the preview
    def show_spec(self, spec: str, kind: str | None, *, image_size: int = 0,
                  test_fraction: float = 0.1, label: str = "") -> None:
        """Preview ``spec`` (``kind`` from ``data.preview.spec_kind``); None hides the
        panel."""
        self.spec = spec
        if kind is None:
            self.previews.forget()
            self.shown = None
            self._open(False)
            return
        self._clear(f"Reading {spec.rstrip('/').rsplit('/', 1)[-1]}…")
        for name, widget in self._field_rows.items():
            self.fields.setRowVisible(widget, (name in TABLE_FIELDS) == (kind != IMAGES))
        self._open(True)
        self.previews.run(lambda _report: preview(spec, image_size=image_size,
                                                  test_fraction=test_fraction, label=label))

    def _open(self, on: bool) -> None:
        """Show or hide the panel (the Host dialog keeps room for it: it does not resize);
        a window on screen too narrow for it widens."""
        if on != self.isHidden():
            return
        self.setVisible(on)
        self.placeholder.setVisible(not on)
        window = self.window()
        if on and window is not self and window.isVisible():
            wide = window.minimumSizeHint().width()
            if window.width() < wide:
                window.resize(wide, window.height())

    def _clear(self, title: str) -> None:
        self.heading.setText(title)
        for label in (self.summary, self.classes, self.train_size, self.notes):
            label.clear()
            label.hide()
        for thumb in self.thumbs:
            thumb.clear()
        self.thumb_grid.hide()
        self.table.hide()
        self.skipped.hide()

    def _show(self, result: Any) -> None:
        if isinstance(result, BaseException):  # a bug in the preview: say it, stay up
            result = Preview("", "", error=f"cannot preview: {result!r}")
        self.shown = result
        self.heading.setText(f"{result.name} — {KIND_NAMES.get(result.kind, 'data')}"
                           if result.name else "Data")
        if result.error:
            self._say(self.skipped, "Cannot use this: " + result.error)
            return
        self._say(self.summary, result.summary)
        heading = "Label values" if result.kind == TABLE else "Classes"
        if result.classes:
            self._say(self.classes, f"{heading}: {class_text(result.classes)}")
        elif result.kind == HUGGING_FACE and result.columns:
            self._say(self.classes, "Columns: " + ", ".join(result.columns))
        if result.image_size:
            self._say(self.train_size, f"Trains at {result.image_size}")
        if result.label:
            self._say(self.train_size, f"Label column: {result.label}")
        self._thumbnails(result.thumbnails)
        self._rows(result)
        if result.notes:
            self._say(self.notes, "\n".join(_first_up(line) for line in result.notes))
        if result.skipped:
            self._say(self.skipped, "\n".join(_first_up(line) for line in result.skipped))

    def _say(self, label: QLabel, text: str) -> None:
        label.setText(text)
        label.show()

    def _thumbnails(self, thumbs: tuple[Thumbnail, ...]) -> None:
        for label, thumb in zip(self.thumbs, thumbs, strict=False):
            label.setPixmap(_pixmap(thumb))
            label.setToolTip(f"{thumb.label}: {thumb.name}")
        self.thumb_grid.setVisible(bool(thumbs))

    def _rows(self, result: Preview) -> None:
        if result.kind != TABLE:
            return
        self.table.setColumnCount(len(result.columns))
        self.table.setRowCount(len(result.rows))
        self.table.setHorizontalHeaderLabels(list(result.columns))
        for r, row in enumerate(result.rows):
            for c, cell in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(cell))
        self.table.resizeColumnsToContents()
        self.table.show()

    # ------------------------------------------------------------------ preparation
    @property
    def preparing(self) -> bool:
        """True while a folder's images are being prepared."""
        return self._prepared is not None

    def prepare(self, spec: str, *, image_size: int, test_fraction: float, test_spec: str = "",
                label: str = "", input: str = "",
                done: Callable[[DataReport | None, BaseException | None], None]) -> None:
        """Prepare ``spec``'s images or table into the cache on a thread, with the bar and
        Cancel; ``done(report, error)`` on the GUI thread (error: PrepareCancelled after
        Cancel)."""
        self._cancel = cancel = threading.Event()
        self._prepared = done
        self.report = None
        self.bar.setRange(0, 0)  # busy until the first count: the folder is read first
        self.bar_text.setText("Reading the data…")
        self.set_preparing(True)
        self._open(True)
        self.preparation.run(lambda report: prepare(
            spec, image_size=image_size, test_fraction=test_fraction, test_spec=test_spec,
            label=label, input=input, progress=report, cancel=cancel.is_set))

    def cancel(self) -> None:
        """Stop the preparation (its thread ends at the next image)."""
        if self.preparing:
            self._cancel.set()
            self.bar_text.setText("Cancelling…")
            self.cancel_button.setEnabled(False)

    def set_preparing(self, on: bool) -> None:
        """Show or hide the bar, its text and Cancel."""
        for widget in (self.bar, self.bar_text, self.cancel_button):
            widget.setVisible(on)
        self.cancel_button.setEnabled(on)

    def _progressed(self, progress: PrepareProgress) -> None:
        self.bar.setRange(0, max(1, progress.total))
        self.bar.setValue(progress.done)
        self.bar_text.setText(_first_up(progress.text))

    def _finished(self, result: Any) -> None:
        done, self._prepared = self._prepared, None
        self.set_preparing(False)
        error = result if isinstance(result, BaseException) else None
        self.report = None if error is not None else result
        if self.report is not None and self.report.skipped:
            self._say(self.skipped, "\n".join(self.report.lines()[1:]))
        if done is not None:
            done(self.report, error)


def _changed(widget: QWidget) -> Any:
    """The signal a field sends when its value changes."""
    if isinstance(widget, QLineEdit):
        return widget.textChanged
    assert isinstance(widget, (QSpinBox, QDoubleSpinBox))
    return widget.valueChanged


class DataPicker(QObject):
    """The dataset field's Folder… and File… buttons, and the panel that previews what the
    field names (a path typed in is previewed once typing stops)."""

    def __init__(self, dialog: QWidget, editors: dict[str, Editor]) -> None:
        super().__init__(dialog)
        self.dialog, self.editors = dialog, editors
        self.panel = DataPanel()
        self.folder_button = QPushButton("Folder…")
        self.folder_button.setToolTip("Your own images, one folder per class (or train/ and "
                                      "test/ inside), or a Hugging Face save_to_disk folder")
        self.folder_button.clicked.connect(self.choose_folder)
        self.file_button = QPushButton("File…")
        self.file_button.setToolTip("A table: a .csv or .parquet file, one row per example")
        self.file_button.clicked.connect(self.choose_file)
        self.timer = QTimer(self, singleShot=True, interval=PREVIEW_DELAY_MS)
        self.timer.timeout.connect(self.preview)
        combo = editors["dataset"].widget
        assert isinstance(combo, QComboBox)
        self.combo = combo
        for button in (self.folder_button, self.file_button):  # the row as tall as the
            button.setStyleSheet(ROW_BUTTON)  # combo box: the dialog grows no taller
        combo.currentTextChanged.connect(self.timer.start)
        self.timer.start()  # a folder the dialog opens with (remembered) is shown too
        for name in DATA_FIELDS:
            if name in editors:
                _changed(editors[name].widget).connect(self.timer.start)

    def preview(self) -> None:
        """Show what the dataset field names (a folder or a file), or hide the panel."""
        self.timer.stop()
        spec = self.editors["dataset"].value()
        value = {n: e.value() for n, e in self.editors.items() if n in DATA_FIELDS}.get
        kind = spec_kind(spec)
        self.panel.show_spec(spec, kind, image_size=value("image_size", 0),
                             test_fraction=value("test_fraction", 0.1),
                             label=value("label_column", ""))
        self.panel.set_own_split(kind == IMAGES and own_split(Path(spec).expanduser()))

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self.dialog, "Your data", str(Path.home()))
        if folder:
            self.combo.setEditText(folder)
            self.preview()

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.dialog, "Your table", str(Path.home()),
                                              "Tables (*.csv *.parquet);;All files (*)")
        if path:
            self.combo.setEditText(path)
            self.preview()
