"""Tab follows what a person reads: in the main window the sessions table, then the buttons
under it left to right (Connect, Check network, Join, Host; it ran table → Join → Host →
Connect), then the recent sessions card and the paired machines card beside it, each card
top to bottom; the Join dialog of a listed session likewise."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QFrame, QGroupBox, QWidget  # noqa: E402

from helpers.sessions import session  # noqa: E402
from helpers.sessions import stopped  # noqa: E402

ROW = 8  # px: two widgets whose middles are this close in height sit on one row


def focused() -> QWidget:
    widget = QApplication.focusWidget()
    assert widget is not None
    return widget


def tab_chain(qtbot, start: QWidget, steps: int = 40) -> list[QWidget]:
    """The widgets Tab reaches from ``start`` (focused) round its window back to it."""
    window = start.window()
    start.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(start.hasFocus, timeout=2_000)
    chain = [start]
    for _ in range(steps):
        qtbot.keyClick(focused(), Qt.Key.Key_Tab)
        widget = focused()
        assert widget.window() is window and widget.isVisible(), widget
        if widget is start:
            return chain
        chain.append(widget)
    raise AssertionError(f"Tab never came back to {start!r}: {chain}")


def card_of(widget: QWidget) -> QWidget:
    """The outermost card or group box that holds ``widget`` (the widget itself if none):
    cards sit side by side, and a card is read whole before the one on its right."""
    found, parent = widget, widget.parentWidget()
    while parent is not None and not parent.isWindow():
        if isinstance(parent, QGroupBox) or isinstance(parent, QFrame) and \
                parent.objectName() == "Card":
            found = parent
        parent = parent.parentWidget()
    return found


def place(widget: QWidget) -> tuple[int, int]:
    """(the middle's height, the left edge) in its window."""
    at = widget.mapTo(widget.window(), QPoint(0, 0))
    return at.y() + widget.height() // 2, at.x()


def reads_before(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """``a`` comes before ``b`` in reading order: on one row, to its left; else above."""
    return a[1] < b[1] if abs(a[0] - b[0]) < ROW else a[0] < b[0]


def follows_reading_order(chain: list[QWidget]) -> bool:
    """Each widget after the one before it: by card where they lie in two, within it else."""
    for a, b in itertools.pairwise(chain):
        card_a, card_b = card_of(a), card_of(b)
        if card_a is card_b and not reads_before(place(a), place(b)) or \
                card_a is not card_b and not reads_before(place(card_a), place(card_b)):
            return False
    return True


def names(chain: list[QWidget]) -> list[str]:
    return [getattr(w, "text", lambda: "")() or w.accessibleName() or type(w).__name__
            for w in chain]


def test_the_main_windows_tab_follows_reading_order(qtbot, main_window, tmp_path: Path):
    main_window.timer.stop()  # no discovery results replace these
    main_window._show_sessions([session(f"s{i}", 7341 + 10 * i) for i in range(3)])
    main_window.recent.show_folders([stopped(tmp_path / f"run{i}") for i in range(2)])
    main_window.sessions_view.selectRow(0)  # Join enabled
    main_window.recent.table.selectRow(0)  # Resume enabled
    main_window.activateWindow()
    qtbot.waitUntil(main_window.isActiveWindow, timeout=5_000)

    chain = tab_chain(qtbot, main_window.sessions_view)
    assert follows_reading_order(chain), names(chain)
    buttons = [main_window.connect_button, main_window.doctor_button,
               main_window.join_button, main_window.host_button]
    assert chain[:5] == [main_window.sessions_view, *buttons], names(chain)
    recent = main_window.recent
    assert {recent.table, recent.resume_button, main_window.paired.enabled_box} <= set(chain)


def test_the_join_dialogs_tab_follows_reading_order(qtbot, main_window):
    main_window.timer.stop()
    main_window._show_sessions([session("first", 7341)])
    main_window.sessions_view.selectRow(0)
    dialog = main_window.join_selected()
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=2_000)
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=5_000)

    chain = tab_chain(qtbot, dialog.pin_edit)
    assert follows_reading_order(chain), names(chain)
    assert chain[-2:] == [dialog.cancel_button, dialog.join_button], names(chain)
    dialog.reject()
