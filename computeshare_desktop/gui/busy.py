"""A busy sign for work that must run on the GUI thread for a few seconds (loading a
dataset to check that it is here): the busy cursor, and the button that started it
disabled with a word saying what goes on, painted before the work starts."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QApplication


@contextmanager
def busy(button: QAbstractButton, text: str) -> Iterator[None]:
    """While the block runs: ``button`` disabled and reading ``text``, a busy cursor."""
    label, enabled = button.text(), button.isEnabled()
    button.setText(text)
    button.setEnabled(False)
    QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
    button.repaint()  # seen now: the work that follows holds the event loop
    try:
        yield
    finally:
        QApplication.restoreOverrideCursor()
        button.setText(label)
        button.setEnabled(enabled)
