"""A busy sign for work the dialog waits on: the busy cursor, and the button that started
it disabled with a word saying what goes on, painted before the work starts. ``busy`` for a
few seconds' work on the GUI thread (loading a dataset to check that it is here), ``Busy``
for work on another thread (the checks before a session opens): begun, then ended once."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QApplication


class Busy:
    """``button`` disabled and reading ``text``, a busy cursor, until ``end()``."""

    def __init__(self, button: QAbstractButton, text: str) -> None:
        self.button, self._label, self._enabled = button, button.text(), button.isEnabled()
        self._on = True
        button.setText(text)
        button.setEnabled(False)
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        button.repaint()  # seen now: work on this thread holds the event loop

    def end(self) -> None:
        """The button and the cursor as they were (a second call does nothing)."""
        if not self._on:
            return
        self._on = False
        QApplication.restoreOverrideCursor()
        self.button.setText(self._label)
        self.button.setEnabled(self._enabled)


@contextmanager
def busy(button: QAbstractButton, text: str) -> Iterator[None]:
    """While the block runs: ``button`` disabled and reading ``text``, a busy cursor."""
    sign = Busy(button, text)
    try:
        yield
    finally:
        sign.end()
