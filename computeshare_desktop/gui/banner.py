"""The banner at the top of a progress window (a warning, or an error such as a failure's
text with its traceback): wrapped, never cut. Up to ``MAX_LINES`` lines it is as tall as its
text; past that it keeps that height and scrolls, so a 60-line failure is whole (every line
reachable, and selectable to copy) while Stop and Close stay on a 720 px screen."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy

MAX_LINES = 4  # the banner's most lines before it scrolls (about 90 px with its padding)
MIN_LINES = 2  # what a short window leaves it: it scrolls sooner


class BannerArea(QScrollArea):
    """Holds the banner's label (objectName "Banner": the style sheet's box and colours)."""

    def __init__(self, label: QLabel) -> None:
        super().__init__()
        self.label = label
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setWidget(label)
        self.setWidgetResizable(True)  # the label takes the viewport's width: it wraps
        self.setFrameShape(QFrame.Shape.NoFrame)
        # a word wider than a narrow window (a path) scrolls sideways rather than be cut
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        # as tall as its text up to MAX_LINES; down to MIN_LINES when the window is short
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.setAccessibleName("Banner")
        self.hide()

    def show_banner(self, banner: tuple[str, str] | None) -> None:
        """Show ``(level, text)`` (restyled when its level changes), or hide (None)."""
        if banner is None:
            self.hide()
            return
        level, text = banner
        label = self.label
        if label.text() != text or label.property("level") != level:
            label.setText(text)
            label.setProperty("level", level)
            label.style().unpolish(label)
            label.style().polish(label)
            self.verticalScrollBar().setValue(0)  # a new text is read from its start
            self.updateGeometry()
        label.show()
        self.show()

    def most_height(self, lines: int = MAX_LINES) -> int:
        """The height of ``lines`` lines and the label's padding."""
        label = self.label
        label.ensurePolished()  # the style sheet's padding is its contents margins
        margins = label.contentsMargins()
        line = label.fontMetrics().lineSpacing() + 1  # as QLabel lays its lines out
        return lines * line + margins.top() + margins.bottom()

    def _height(self, lines: int) -> int:
        width = self.viewport().width() or super().sizeHint().width()
        return min(self.label.heightForWidth(max(1, width)), self.most_height(lines))

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's API
        return QSize(super().sizeHint().width(), self._height(MAX_LINES))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's API
        return QSize(0, self._height(MIN_LINES))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's API
        """A new width wraps the text anew: ask the layout for the height it now needs."""
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.updateGeometry()
