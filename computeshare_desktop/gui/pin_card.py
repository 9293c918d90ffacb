"""The session PIN, large and grouped for reading aloud across a room."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QResizeEvent, QShowEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from .formatting import group_pin
from .panels import CopyButton

HINT_WIDTH = 340  # the join hint in three lines at most: the hub window fits 720 px high
HINT_LINES = 3  # the room the hint keeps from the start ("Starting the hub…": one line)


class PinCard(QFrame):
    """Shows ``428 913`` in big monospace digits, with how workers join underneath; both
    keep the height their text needs at any width (a window's layout does not ask a wrapped
    label's height for its width: squeezed, the hint overlapped the digits and lost its
    last line, the address)."""

    def __init__(self, pin: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("PinCard")
        self.pin = pin
        caption = QLabel("Session PIN")
        caption.setObjectName("PinCaption")
        self.digits = QLabel(group_pin(pin))
        self.digits.setObjectName("PinDigits")
        self.digits.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = QFont("DejaVu Sans Mono")
        font.setStyleHint(QFont.StyleHint.Monospace)
        font.setLetterSpacing(QFont.SpacingType.AbsoluteSpacing, 4)
        self.digits.setFont(font)  # the style sheet sets the size; this sets the family
        self.digits.setAccessibleName("Session PIN")
        self.digits.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # reachable with Tab
        self.hint = QLabel("Starting the hub…")
        self.hint.setProperty("role", "muted")
        self.hint.setWordWrap(True)
        self.hint.setMinimumWidth(HINT_WIDTH)
        self.copy_button = CopyButton("Copy PIN", lambda: self.pin,
                                      "Copy the PIN to the clipboard")
        self.new_button = QPushButton("New PIN")
        self.new_button.setToolTip("Replace the PIN (machines already paired stay; the old "
                                   "PIN stops working)")
        self._describe()
        for button in (self.copy_button, self.new_button):  # end() hides them: the card
            policy = button.sizePolicy()  # keeps its width, so the head does not move
            policy.setRetainSizeWhenHidden(True)
            button.setSizePolicy(policy)

        text = QVBoxLayout()
        text.setSpacing(2)
        text.addWidget(caption)
        text.addWidget(self.digits)
        text.addWidget(self.hint)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(20, 8, 20, 8)
        layout.addLayout(text, 1)
        buttons = QVBoxLayout()
        buttons.addWidget(self.copy_button)
        buttons.addWidget(self.new_button)
        layout.addLayout(buttons)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's API
        super().showEvent(event)
        self._keep_whole()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's API
        super().resizeEvent(event)
        self._keep_whole()

    def _keep_whole(self) -> None:
        """The digits as tall as their font (the style sheet's), the hint as tall as its
        lines at its width, and never less than ``HINT_LINES`` (the join hint that replaces
        "Starting the hub…" moves nothing); the window's minimum grows with them."""
        self.digits.setMinimumSize(self.digits.sizeHint())
        width = self.hint.width() if self.hint.width() > 1 else self.hint.sizeHint().width()
        needed = max(self.hint.heightForWidth(width), self._lines_height(width))
        if needed > 0 and needed != self.hint.minimumHeight():
            self.hint.setMinimumHeight(needed)

    def _lines_height(self, width: int) -> int:
        """The height of ``HINT_LINES`` lines of the hint, as the hint lays them out."""
        shown = self.hint.text()
        self.hint.setText("\n".join("x" * HINT_LINES))
        height = self.hint.heightForWidth(width)
        self.hint.setText(shown)
        return height

    def set_pin(self, pin: str) -> None:
        """Show a new PIN."""
        self.pin = pin
        self.digits.setText(group_pin(pin))
        self._describe()

    def _describe(self) -> None:
        """Screen readers spell the PIN digit by digit ("4 2 8, 9 1 3")."""
        spoken = ", ".join(" ".join(group) for group in group_pin(self.pin).split())
        self.digits.setAccessibleDescription(spoken)

    def end(self) -> None:
        """The session is over: its PIN pairs nothing, so no New PIN and no Copy PIN, and
        the digits are greyed."""
        self.new_button.hide()
        self.copy_button.hide()
        self.digits.setEnabled(False)

    def set_hint(self, text: str) -> None:
        """The line under the digits (how to join)."""
        if self.hint.text() != text:
            self.hint.setText(text)
            self._keep_whole()
