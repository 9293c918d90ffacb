"""Issue 20's trial, what it saw (findings 5, 15, 18 and POLISH's note): the accent marks the
primary button only, never the focused one; the output-folder dialog has one primary button
and a plain Close; a long worker name elides instead of hiding columns; a finished hub
window still fits a 1280×720 screen with its Close button in view."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtGui import QColor  # noqa: E402
from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton  # noqa: E402

from computeshare_desktop.gui.panels import FolderDialog  # noqa: E402
from test_ui_polish import fill  # noqa: E402

ACCENT = QColor("#4F46E5").rgb()  # the primary button's fill


def focus(qtbot, button: QPushButton) -> None:
    button.setFocus()
    qtbot.waitUntil(button.hasFocus, timeout=1000)


def test_the_focused_button_of_a_dialog_does_not_take_the_accent(qtbot, styled_app):
    dialog = QDialog()
    qtbot.addWidget(dialog)
    line = QHBoxLayout(dialog)
    cancel, start = QPushButton("Cancel"), QPushButton("Start hosting")
    start.setObjectName("Primary")
    start.setDefault(True)
    line.addWidget(cancel)
    line.addWidget(start)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitExposed(dialog)
    focus(qtbot, cancel)  # a dialog's focused button becomes its default (autoDefault)
    assert cancel.isDefault()
    assert fill(cancel) != ACCENT and fill(start) == ACCENT


def test_the_folder_dialog_has_one_primary_button_and_a_plain_close(qtbot, styled_app,
                                                                      tmp_path):
    dialog = FolderDialog(str(tmp_path))  # deletes itself on closing
    dialog.show()
    dialog.activateWindow()
    qtbot.waitExposed(dialog)
    buttons = dialog.findChildren(QPushButton)
    assert [b.text() for b in buttons if b.objectName() == "Primary"] == ["Copy"]
    close = dialog.close_button
    assert close.text() == "Close" and close.icon().isNull()  # no glyph over its word
    for button in (close, dialog.copy_button, close):  # whichever has the focus
        focus(qtbot, button)
        assert fill(close) != ACCENT and fill(dialog.copy_button) == ACCENT
    close.click()
    assert not dialog.isVisible()
