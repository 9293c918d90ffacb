"""Asking before a worker is removed from a session (Kick): the default keeps it.

A kick bans the machine for the rest of the session, so it is asked every time (there is
no "Don't ask again", unlike stopping: see ``confirm.StopQuestion``).
"""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget


def kick_text(name: str) -> str:
    """The question, naming the machine as its row does."""
    return f"Remove {name}? It cannot join this session again."


class KickQuestion:
    """``ask(parent, name)`` is True when the host confirms the removal."""

    def __init__(self) -> None:
        self.box: QMessageBox | None = None  # the box on screen, while it is

    def ask(self, parent: QWidget | None, name: str) -> bool:
        """Show the question modally; Escape, Enter and closing keep the worker."""
        box = QMessageBox(QMessageBox.Icon.Question, "Remove worker?", kick_text(name),
                          parent=parent)
        remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
        keep = box.addButton("Keep worker", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(keep)
        box.setEscapeButton(keep)
        self.box = box
        try:
            box.exec()
        finally:
            self.box = None
        return box.clickedButton() is remove
