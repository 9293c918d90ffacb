"""The charts shrink with their panel: on a 1280×720 screen a hub window gives them about
145 px, and plots that kept 180 px were cut by the panel (no x axis, no "round")."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402


def test_a_short_hub_window_shows_its_charts_whole(qtbot, styled_app):
    idle = SimpleNamespace(running=True, stopping=False, scope="chart-fit-test",  # a runner
                           drain=list, stop=lambda: None, join=lambda timeout_s: True)
    window = ProgressWindow(idle, ProgressState("hub", total_rounds=2000), refresh_ms=10_000,
                            title="Hosting Charts", subtitle="s", pin="152649")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.resize(1120, window.minimumSizeHint().height())
    qtbot.wait(50)
    panel = window.charts
    for plot in (panel.loss_plot, panel.second_plot):
        assert plot.height() <= panel.height(), (plot.height(), panel.height())
