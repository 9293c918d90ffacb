"""The output folder's dialog: where no file manager opens the folder, a small dialog shows
its path with a Copy button (nothing is copied before it is pressed), one primary button and
a plain Close."""

from __future__ import annotations


import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QGuiApplication  # noqa: E402
from PySide6.QtWidgets import (QPushButton)

from computeshare_desktop.gui.panels import FolderDialog  # noqa: E402
from helpers.ui import fill  # noqa: E402
from helpers.ui import ACCENT, focus  # noqa: E402
from helpers.windows import finished_window  # noqa: E402


def test_the_folder_dialog_shows_the_path_and_copies_it(qtbot, styled_app, tmp_path):
    QGuiApplication.clipboard().setText("something else")
    dialog = FolderDialog(str(tmp_path))
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.field.text() == str(tmp_path) and dialog.field.isReadOnly()
    dialog.copy_button.click()
    assert QGuiApplication.clipboard().text() == str(tmp_path)
    assert dialog.copy_button.text() == "Copied ✓"


def test_without_a_file_manager_the_folder_is_shown_with_a_copy_button(qtbot, styled_app,
                                                                       monkeypatch, tmp_path):
    from PySide6.QtGui import QDesktopServices

    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: False))
    window = finished_window(qtbot, tmp_path)
    window.refresh()
    assert window.finish_card.open_button.isEnabled()
    QGuiApplication.clipboard().setText("something else")
    window.finish_card.open_button.click()
    dialog = window.folder_dialog
    assert dialog is not None and dialog.isVisible() and not dialog.isModal()
    assert dialog.field.text() == str(tmp_path)
    QGuiApplication.clipboard().setText("something else")
    dialog.copy_button.click()
    assert QGuiApplication.clipboard().text() == str(tmp_path)
    dialog.close()


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
