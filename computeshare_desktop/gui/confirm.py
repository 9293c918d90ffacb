"""Asking before a training is stopped: Stop, Leave, closing a window and quitting.

One question box for all of them, with a "Don't ask again" box that turns the question off
in the settings (it comes back from the settings file's ``confirm_stop``).
"""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QMessageBox, QWidget

from .settings import Settings


class StopQuestion:
    """``ask(...)`` is True when the user confirms (or has turned the question off)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.box: QMessageBox | None = None  # the box on screen, while it is

    def ask(self, parent: QWidget | None, title: str, text: str, action: str) -> bool:
        """Show the question modally; ``action`` names the button that goes ahead."""
        if not self.settings.confirm_stop():
            return True
        box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
        go = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
        keep = box.addButton("Keep training", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(keep)
        box.setEscapeButton(keep)
        again = QCheckBox("Don't ask again")
        box.setCheckBox(again)
        self.box = box
        try:
            box.exec()
        finally:
            self.box = None
        if box.clickedButton() is not go:
            return False
        if again.isChecked():
            self.settings.set_confirm_stop(False)
            self.settings.save()
        return True
