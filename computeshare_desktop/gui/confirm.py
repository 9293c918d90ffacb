"""Asking before a training is stopped: Stop, Leave, closing a window and quitting.

One question box for all of them, with a "Don't ask again" box that turns the question off
in the settings (it comes back from the settings file's ``confirm_stop``). ``ModalQuestion``
is the box itself, which other questions share (removing a worker: ``kick_question``).
"""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QMessageBox, QPushButton, QWidget

from .settings import Settings


def restyle(button: QPushButton, name: str) -> None:
    """Name ``button`` for the style sheet (``Primary``, ``Danger``) and apply its look: a
    message box's buttons are polished as they are added."""
    button.setObjectName(name)
    button.style().unpolish(button)
    button.style().polish(button)


class ModalQuestion:
    """A modal question whose default (and Escape) button keeps things as they are."""

    def __init__(self) -> None:
        self.box: QMessageBox | None = None  # the box on screen, while it is

    def ask_box(self, parent: QWidget | None, title: str, text: str, action: str,
                keep: str, check: str = "") -> tuple[bool, bool]:
        """Whether the ``action`` button was clicked (not ``keep``, Escape or closing), and
        whether the ``check`` box (shown when named) was ticked."""
        box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
        go = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
        stay = box.addButton(keep, QMessageBox.ButtonRole.RejectRole)
        restyle(go, "Danger")
        restyle(stay, "Primary")  # the accent stays on it, wherever the focus goes
        box.setDefaultButton(stay)
        box.setEscapeButton(stay)
        ticked = QCheckBox(check)
        if check:
            box.setCheckBox(ticked)
        self.box = box
        try:
            box.exec()
        finally:
            self.box = None
        if box.clickedButton() is not go:  # (a signal may have closed the window and box)
            return False, False
        return True, bool(check) and ticked.isChecked()


class StopQuestion(ModalQuestion):
    """``ask(...)`` is True when the user confirms (or has turned the question off)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings

    def ask(self, parent: QWidget | None, title: str, text: str, action: str) -> bool:
        """Show the question modally; ``action`` names the button that goes ahead."""
        if not self.settings.confirm_stop():
            return True
        go, again = self.ask_box(parent, title, text, action, "Keep training",
                                 "Don't ask again")
        if not go:
            return False
        if again:
            self.settings.set_confirm_stop(False)
            self.settings.save()
        return True
