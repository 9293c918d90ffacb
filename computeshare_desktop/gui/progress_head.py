"""A progress window's head, kept steady: its status chip as wide as its widest text (a
change of text must not re-wrap the titles beside it and move everything below), and a
window title no other open window of the app has (two sessions of one name)."""

from __future__ import annotations

from typing import Iterable

from PySide6.QtWidgets import QApplication, QLabel


def steady_width(label: QLabel, texts: Iterable[str]) -> None:
    """Give ``label`` the width of the widest of ``texts`` (style sheet padding included),
    so that changing its text among them moves nothing beside it."""
    shown = label.text()
    label.ensurePolished()
    widths = []
    for text in texts:
        label.setText(text)
        widths.append(label.sizeHint().width())
    label.setText(shown)
    label.setFixedWidth(max(widths))


def distinct_title(title: str, suffix: str = " — ComputeShare") -> str:
    """``title`` and ``suffix``, or with `` (2)``, `` (3)``… after ``title`` when a shown
    window of the app has that title already."""
    taken = {w.windowTitle() for w in QApplication.topLevelWidgets() if w.isVisible()}
    name, number = f"{title}{suffix}", 2
    while name in taken:
        name, number = f"{title} ({number}){suffix}", number + 1
    return name
