"""The main window works without a mouse: Tab leaves the sessions table for the buttons,
Enter on a selected session opens its Join dialog, and Join becomes the primary button."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from computeshare_desktop.discovery import DiscoveredSession  # noqa: E402
from helpers.sessions import session  # noqa: E402


def test_tab_leaves_the_table_and_enter_joins_the_selected_session(qtbot, main_window):
    main_window.timer.stop()  # no discovery results replace these two
    main_window._show_sessions([session("first", 7341), session("second", 7351)])
    view = main_window.sessions_view
    main_window.activateWindow()
    view.setFocus()
    qtbot.waitUntil(view.hasFocus, timeout=5_000)
    assert not main_window.join_button.isEnabled()
    assert main_window.host_button.objectName() == "Primary"

    qtbot.keyClick(view, Qt.Key.Key_Down)  # selects a row, as arrows do
    qtbot.waitUntil(lambda: main_window.selected_session() is not None, timeout=2_000)
    assert main_window.join_button.isEnabled()
    assert main_window.join_button.objectName() == "Primary"
    assert main_window.host_button.objectName() != "Primary"

    qtbot.keyClick(view, Qt.Key.Key_Tab)  # out of the table, not to its next cell
    qtbot.waitUntil(lambda: QApplication.focusWidget() is main_window.connect_button,
                    timeout=2_000)  # the first button under it (test_ui_tab_order.py)
    qtbot.keyClick(main_window.connect_button, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is main_window.doctor_button

    view.setFocus()
    qtbot.waitUntil(view.hasFocus, timeout=2_000)
    qtbot.keyClick(view, Qt.Key.Key_Return)
    dialog = main_window.join_dialog
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=2_000)
    assert dialog.target.label == main_window.selected_session().name
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)  # Escape cancels
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=2_000)


def test_two_sessions_with_one_name_are_told_apart(qtbot, main_window):
    main_window.timer.stop()
    first, second = session("vm — mnist-sample", 7341), session("vm — mnist-sample", 7351)
    second = DiscoveredSession(dataclasses.replace(second.advert, key_fingerprint="ef" * 8),
                               second.addresses, "vm2._computeshare._tcp.local.")
    main_window._show_sessions([first, second])
    model = main_window.model
    rows = [[model.data(model.index(r, c)) for c in range(model.columnCount())]
            for r in range(2)]
    assert rows[0][0] == rows[1][0]  # the same name...
    assert rows[0] != rows[1] and rows[0][1] == "box:7341" and rows[1][1] == "box:7351"
    assert rows[0][3] == "600" and (rows[0][6], rows[1][6]) == ("cdcdcdcd", "efefefef")

