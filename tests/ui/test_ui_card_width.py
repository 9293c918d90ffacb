"""A stat card's value never widens its window: with realistic figures ("987.6 MB / 1.2 GB")
a hub window needed 1,071 px and a worker's 1,229 px, over the 1,024 px the app allows.
A squeezed value is cut with "…" and its whole text is the card's tool tip."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.panels import StatCard  # noqa: E402
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402

LONG = "987.6 MB / 1.2 GB"


@pytest.mark.parametrize("role", ["hub", "worker"])
def test_long_figures_keep_a_window_within_1024_px(qtbot, styled_app, role):
    idle = SimpleNamespace(running=True, stopping=False, scope="card-width-test",  # a runner
                           drain=list, stop=lambda: None, join=lambda timeout_s: True)
    window = ProgressWindow(idle, ProgressState(role, name="vm", total_rounds=2500),
                            refresh_ms=10_000, title="Training for Widths",
                            subtitle="simplenet on mnist-sample", pin="152649" if role == "hub"
                            else None)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    for card in window.cards.values():
        card.set_value(LONG + " · 12,345 samples/s")
    qtbot.wait(50)  # the layouts take the new sizes
    assert all(card.value.isVisibleTo(window) for card in window.cards.values())
    assert window.minimumSizeHint().width() <= 1024
    window.resize(window.minimumSizeHint())
    qtbot.wait(10)
    assert all(card.value.text() == LONG + " · 12,345 samples/s" for card in window.cards.values())


def test_a_squeezed_value_shows_its_whole_text_as_a_tip(qtbot, styled_app):
    card = StatCard("Sent / received", LONG)
    qtbot.addWidget(card)
    card.resize(card.minimumSizeHint())
    card.show()
    qtbot.waitExposed(card)
    assert card.value.width() < card.value.sizeHint().width()
    assert card.value.shown().endswith("…")
    assert card.value.toolTip() == LONG and card.value.text() == LONG
    card.resize(card.sizeHint().width() + 40, card.height())
    qtbot.waitUntil(lambda: card.value.toolTip() == "")
    assert card.value.shown() == LONG


def test_two_byte_counts_of_one_unit_say_it_once():
    from computeshare_desktop.gui.formatting import human_pair

    assert human_pair(16_800_000, 14_900_000) == "16.8 / 14.9 MB"
    assert human_pair(16_800_000, 900_000) == "16.8 MB / 900.0 KB"
    assert human_pair(0, 0) == "0 / 0 B"


def test_a_workers_eight_cards_show_whole_in_its_default_window(qtbot, styled_app):
    idle = SimpleNamespace(running=True, stopping=False, scope="card-width-test",  # a runner
                           drain=list, stop=lambda: None, join=lambda timeout_s: True)
    window = ProgressWindow(idle, ProgressState("worker", name="vm", total_rounds=2000),
                            refresh_ms=10_000, title="Training for Widths", subtitle="s")
    qtbot.addWidget(window)
    window.resize(1120, 680)  # the screenshots' worker window, on a 1280×720 screen
    window.show()
    qtbot.waitExposed(window)
    figures = {"loss": "0.0054", "accuracy": "95.80%", "compute": "15 ms",
               "per_round": "267.5 KB", "busy": "66%", "traffic": "16.8 / 14.9 MB",
               "bandwidth": "4.3 MB/s", "pushed": "227"}
    for key, text in figures.items():
        window.cards[key].set_value(text)
    qtbot.wait(50)
    cut = [key for key, card in window.cards.items() if card.value.shown() != card.value.text()]
    assert not cut, cut
