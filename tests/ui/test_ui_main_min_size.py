"""The main window at its minimum size shows at least three whole session rows under the
table's header (it showed half of one at 763×470), its buttons whole, and the recent
sessions and paired machines cards whole below; that minimum fits a 1280×720 screen with a
task bar and a title bar."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QPoint, QRect  # noqa: E402
from PySide6.QtWidgets import QWidget  # noqa: E402

from helpers.sessions import session  # noqa: E402
from helpers.screens import fits  # noqa: E402
from helpers.sessions import stopped  # noqa: E402

MOST_HEIGHT = 640  # 720 less a panel and a title bar
ROWS = 3  # whole session rows at the least


def rect_in(window: QWidget, widget: QWidget) -> QRect:
    return QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())


def whole_rows(view) -> int:
    """How many rows lie wholly inside the table's viewport."""
    inside = view.viewport().rect()
    return sum(inside.contains(view.visualRect(view.model().index(row, 0)))
               for row in range(view.model().rowCount()))


def at_minimum(qtbot, window) -> None:
    qtbot.wait(50)
    window.resize(window.minimumSize().expandedTo(window.minimumSizeHint()))
    qtbot.waitUntil(lambda: window.size() == window.minimumSizeHint(), timeout=2_000)
    qtbot.wait(50)


@pytest.mark.parametrize("recent", [0, 2], ids=["no-recent-sessions", "recent-sessions"])
def test_at_its_minimum_size_three_whole_sessions_show(qtbot, main_window, tmp_path: Path,
                                                      recent: int):
    main_window.timer.stop()  # no discovery results replace these
    main_window._show_sessions([session(f"s{i}", 7341 + 10 * i) for i in range(6)])
    main_window.recent.show_folders([stopped(tmp_path / f"run{i}") for i in range(recent)])
    at_minimum(qtbot, main_window)

    size = main_window.size()
    assert size.height() <= MOST_HEIGHT and fits(size), size
    view = main_window.sessions_view
    assert view.isVisible() and whole_rows(view) >= ROWS, \
        (whole_rows(view), view.viewport().height())
    window, area = main_window, main_window.centralWidget().rect()
    for button in (window.connect_button, window.doctor_button, window.join_button,
                   window.host_button, window.recent.resume_button,
                   window.paired.remove_button):
        if button.isVisible():
            at = rect_in(window, button)
            assert area.contains(at), (button.text(), at, area)
            assert button.size().expandedTo(button.minimumSizeHint()) == button.size(), \
                button.text()  # never squeezed below its text
    for card in (window.recent, window.paired):
        if card.isVisible():
            assert area.contains(rect_in(window, card)), card
            assert card.height() >= card.minimumSizeHint().height(), card
    assert window.recent.isVisible() == bool(recent)
    status = window.statusBar()
    assert status.isVisible() and rect_in(window, status).top() >= area.bottom()
