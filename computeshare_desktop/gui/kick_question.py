"""Asking before a worker is removed from a session (Kick): the default keeps it.

A kick bans the machine for the rest of the session, so it is asked every time (there is
no "Don't ask again", unlike stopping: see ``confirm.StopQuestion``).
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from .confirm import ModalQuestion


def kick_text(name: str) -> str:
    """The question, naming the machine as its row does."""
    return f"Remove {name}? It cannot join this session again."


class KickQuestion(ModalQuestion):
    """``ask(parent, name)`` is True when the host confirms the removal."""

    def ask(self, parent: QWidget | None, name: str) -> bool:
        """Show the question modally; Escape, Enter and closing keep the worker."""
        return self.ask_box(parent, "Remove worker?", kick_text(name), "Remove",
                            "Keep worker")[0]
