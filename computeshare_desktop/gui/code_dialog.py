"""Asking the person whether to run the Python code a hub offers for its model.

A hub whose model cannot be exported as a graph may offer its source instead (the hub's
``--offer-code``). This worker refused it (nothing of it ran); the question shows the hub,
the file and its full SHA-256, says what approving means, and defaults to "Don't run".
"Approve and rejoin" stores the approval of that exact hash for that hub's key
(``service.approve_code``) and joins again, which then runs the code.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from ..events import CodeRefused
from .confirm import restyle

RUN = "Approve and rejoin"
DONT = "Don't run"


def code_text(refused: CodeRefused) -> str:
    """The question's text (rich text: the hash in a monospaced line of its own)."""
    hub = escape(refused.hub) or "the hub"
    return (f"<p>The hub <b>{hub}</b> cannot send its model <b>{escape(refused.model)}</b> "
            f"as a checked graph and offers its Python source instead. Nothing of it has "
            f"run.</p>"
            f"<p>File SHA-256:<br><code>{escape(refused.sha256)}</code></p>"
            f"<p>Approving runs this file on this computer with your rights, with no "
            f"sandbox: it can read and change your files. Approve it only if you trust the "
            f"person who hosts this session. The approval holds for this exact file from "
            f"this hub only; any change to the file asks again.</p>")


class CodeQuestion:
    """``ask(...)`` is True when the person approves the code (a modal question)."""

    def __init__(self) -> None:
        self.box: QMessageBox | None = None  # the box on screen, while it is

    def make_box(self, parent: QWidget | None, refused: CodeRefused) -> QMessageBox:
        """The question, its default (and Escape) button "Don't run"."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Run this hub's code?", code_text(refused),
                          parent=parent)
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.addButton(RUN, QMessageBox.ButtonRole.AcceptRole)
        dont = box.addButton(DONT, QMessageBox.ButtonRole.RejectRole)
        restyle(dont, "Primary")  # the accent stays on it, wherever the focus goes
        box.setDefaultButton(dont)
        box.setEscapeButton(dont)
        return box

    def ask(self, parent: QWidget | None, refused: CodeRefused) -> bool:
        box = self.box = self.make_box(parent, refused)
        try:
            box.exec()
        finally:
            self.box = None
        clicked = box.clickedButton()
        return clicked is not None and clicked.text() == RUN
