"""Small building blocks of the progress window: stat cards, the finish card, the log pane,
and the small dialog that says where the output folder is when no file manager opens it."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import QSize, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QGuiApplication, QPainter, QPaintEvent, QResizeEvent, QTextCursor
from PySide6.QtWidgets import (QDialog, QFrame, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit,
                               QPushButton, QVBoxLayout, QWidget)

from .formatting import percent
from .progress_rows import FinalResult

MAX_LOG_LINES = 2000


class ElidingLabel(QLabel):
    """A one-line label that asks for little width and, when squeezed, draws its text cut
    with "…" and shows the whole text as its tool tip: a card's value never widens its window
    ("987.6 MB / 1.2 GB" made a hub window need 1,071 px). ``text()`` stays the whole text."""

    MIN_WIDTH = 64

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        hint = super().minimumSizeHint()
        return QSize(min(hint.width(), self.MIN_WIDTH), hint.height())

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        super().setText(text)
        self._tip()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._tip()

    def shown(self) -> str:
        """The text as drawn: whole, or cut with "…" to the label's width."""
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                             self.contentsRect().width())

    def _tip(self) -> None:
        self.setToolTip(self.text() if self.shown() != self.text() else "")

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        self.style().drawItemText(painter, self.contentsRect(), int(self.alignment()),
                                  self.palette(), self.isEnabled(), self.shown(),
                                  self.foregroundRole())


class StatCard(QFrame):
    """A caption over one big value, e.g. "Sent" / "12.4 MB"."""

    def __init__(self, title: str, value: str = "—", widest: str = "") -> None:
        """``widest``: the widest figure it must show whole (a window at its minimum size
        shows it uncut); a longer one is cut with "…" rather than widen the window."""
        super().__init__()
        self.setObjectName("StatCard")
        self.widest = widest
        caption = QLabel(title)
        caption.setObjectName("StatTitle")
        self.value = ElidingLabel(value)
        self.value.setObjectName("StatValue")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 10)
        layout.setSpacing(0)
        layout.addWidget(caption)
        layout.addWidget(self.value)

    def set_value(self, text: str) -> None:
        """Show ``text`` (no repaint when unchanged): whole, as long as it is no wider
        than ``widest`` (the card asks for that width)."""
        if self.value.text() != text:
            self.value.setText(text)
            if not self.widest:
                return
            metrics = self.value.fontMetrics()
            width = min(metrics.horizontalAdvance(text), metrics.horizontalAdvance(self.widest))
            self.value.setMinimumWidth(width + 2)


class FinishCard(QFrame):
    """Shown at the end: final accuracy, where the model is, a button to open the folder."""

    open_folder = Signal(QUrl)

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("FinishCard")
        self.headline = QLabel()
        self.headline.setObjectName("FinalAccuracy")
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        self.model_path = QLabel()
        self.model_path.setProperty("role", "muted")
        self.model_path.setWordWrap(True)
        self.open_button = QPushButton("Open output folder")
        self.open_button.setObjectName("Primary")
        self.open_button.setEnabled(False)
        self.url = QUrl()
        self.open_button.clicked.connect(lambda: self.open_folder.emit(self.url))
        text = QVBoxLayout()
        text.addWidget(self.headline)
        text.addWidget(self.detail)
        text.addWidget(self.model_path)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(18, 12, 18, 12)
        layout.addLayout(text, 1)
        layout.addWidget(self.open_button)

    def show_result(self, final: FinalResult, out_dir: str, role: str) -> None:
        """Fill in the card for a hub (accuracy, model) or a worker (its contribution)."""
        if role == "hub" and final.accuracy is not None:
            self.headline.setText(f"Final test accuracy: {percent(final.accuracy)}")
            self.detail.setText(f"{final.version} rounds in {final.seconds:.1f} s")
            self.model_path.setText(f"Model saved to {final.model_path}")
            folder = out_dir or str(Path(final.model_path).parent)
            self.url = QUrl.fromLocalFile(folder)
            self.open_button.setEnabled(bool(folder))
        else:
            contribution = (f"This machine pushed {final.pushed:,} gradients "
                            f"({final.rejected:,} refused) over {final.version} rounds.")
            if final.accuracy is not None:  # the hub's final evaluation reached this worker
                self.headline.setText(f"Final test accuracy: {percent(final.accuracy)}")
                self.detail.setText(contribution)
                self.model_path.setText(f"The trained model is on the hub: {final.model_path}")
            else:
                self.headline.setText("Session finished")
                self.detail.setText(contribution)
                self.model_path.setText("The trained model and its accuracy are on the hub.")
            self.open_button.hide()


class CopyButton(QPushButton):
    """A button that copies ``text()`` to the clipboard and says "Copied ✓" for two
    seconds."""

    def __init__(self, label: str, text: Callable[[], str], tip: str) -> None:
        super().__init__(label)
        self.label, self._text = label, text
        self.setToolTip(tip)
        self._copied = QTimer(self)
        self._copied.setSingleShot(True)
        self._copied.timeout.connect(lambda: self.setText(self.label))
        self.clicked.connect(self.copy)

    def copy(self) -> None:
        """Copy, and say so on the button."""
        QGuiApplication.clipboard().setText(self._text())
        self.setText("Copied ✓")
        self._copied.start(2000)


class FolderDialog(QDialog):
    """Where the output folder is, for a computer where no file manager opened it: the path
    (selectable) and a Copy button that puts it on the clipboard. Not modal: the window
    behind it stays usable."""

    def __init__(self, path: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Output folder")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.path = path
        text = QLabel("No file manager could open the output folder. It is here:")
        text.setWordWrap(True)
        self.field = QLineEdit(path)
        self.field.setReadOnly(True)
        self.field.setAccessibleName("Output folder path")
        self.field.setMinimumWidth(min(720, max(360, self.field.fontMetrics()
                                                .horizontalAdvance(path) + 32)))
        self.copy_button = CopyButton("Copy", lambda: self.path,
                                      "Copy the folder's path to the clipboard")
        self.copy_button.setObjectName("Primary")  # the one primary button: what it is for
        self.copy_button.setDefault(True)
        self.close_button = QPushButton("Close")  # plain: no style icon over its word
        self.close_button.setAutoDefault(False)  # focused, it still leaves Enter to Copy
        self.close_button.clicked.connect(self.reject)
        line = QHBoxLayout()
        line.addWidget(self.field, 1)
        line.addWidget(self.copy_button)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 14, 18, 14)
        layout.addWidget(text)
        layout.addLayout(line)
        layout.addLayout(buttons)


class LogPane(QPlainTextEdit):
    """Read-only, bounded, timestamped lines; follows the end unless the user scrolled up."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("LogPane")
        self.setReadOnly(True)
        self.setMaximumBlockCount(MAX_LOG_LINES)
        self.setPlaceholderText("Session events appear here.")

    def add_lines(self, lines: list[str], stamp: str) -> None:
        """Append lines, prefixed by ``stamp`` (e.g. the wall-clock time)."""
        if not lines:
            return
        bar = self.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        self.appendPlainText("\n".join(f"{stamp}  {line}" for line in lines))
        if at_end:
            self.moveCursor(QTextCursor.MoveOperation.End)
            bar.setValue(bar.maximum())


def row(*widgets: QWidget, spacing: int = 8) -> QHBoxLayout:
    """A horizontal layout of ``widgets``, each as wide as its content asks when there is
    room (a long value such as "25.6 MB / 3.2 MB" takes more than "93.20%"), the spare width
    shared out evenly, and the widest squeezed first when there is not."""
    layout = QHBoxLayout()
    layout.setSpacing(spacing)
    for widget in widgets:
        layout.addWidget(widget)
    return layout
