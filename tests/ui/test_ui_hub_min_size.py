"""The hub window at its minimum size keeps what matters whole: the PIN's
digits as tall as their font, the join hint with every line (the address last), each stat
card's figure uncut; and on a 1280×720 screen with a task bar the window opens inside it,
Stop and Close in view (it opened at 1120×755)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QPoint, QRect  # noqa: E402

from computeshare_desktop.gui import placement  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from helpers.screens import AREA, fits  # noqa: E402
from helpers.windows import busy_hub_window  # noqa: E402

ADDRESS = "192.168.1.23:47321"


def settle(qtbot, window: ProgressWindow) -> None:
    qtbot.wait(50)
    window.resize(window.minimumSizeHint())  # what a person can squeeze it to
    qtbot.wait(50)
    window.refresh()
    qtbot.wait(50)


def test_at_its_minimum_size_the_pin_its_address_and_the_cards_are_whole(qtbot, styled_app):
    window = busy_hub_window(qtbot)
    settle(qtbot, window)
    card = window.pin_card
    assert card is not None
    digits, hint = card.digits, card.hint
    assert ADDRESS in hint.text()
    assert digits.height() >= digits.fontMetrics().height()  # its glyphs inside its box
    assert digits.width() >= digits.fontMetrics().horizontalAdvance(digits.text())
    assert hint.height() >= hint.heightForWidth(hint.width())  # every line, the address too
    top_of_hint = hint.mapTo(card, QPoint(0, 0)).y()
    assert digits.mapTo(card, QPoint(0, digits.height())).y() <= top_of_hint
    assert card.rect().contains(QRect(hint.mapTo(card, QPoint(0, 0)), hint.size()))
    for name, stat in window.cards.items():
        value = stat.value
        assert value.shown() == value.text(), (name, value.text(), value.width())
        assert value.width() >= value.fontMetrics().horizontalAdvance(value.text()), name
    assert fits(window.size()), window.size()  # 1280×720 with a task bar and a title bar


def test_on_a_1280x720_screen_the_hub_window_opens_inside_it(qtbot, main_window, monkeypatch):
    monkeypatch.setattr(placement, "available_geometry", lambda anchor=None: AREA)
    window = busy_hub_window(qtbot)
    window.hide()
    main_window._open_progress(window)  # as Start hosting opens it (1120×860 asked)
    qtbot.waitExposed(window)
    qtbot.wait(50)
    assert AREA.contains(window.geometry()), window.geometry()
    for button in (window.stop_button, window.close_button):
        at = QRect(button.mapTo(window, QPoint(0, 0)), button.size())
        assert window.rect().contains(at) and AREA.contains(at.translated(window.pos()))
