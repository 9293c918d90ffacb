"""The curves: axes that change rarely (cheap redraws) and data that arrives in batches."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.charts import ChartsPanel, _ceiling, round_axis_limit  # noqa: E402


def test_axes_grow_in_a_few_steps():
    limits = {round_axis_limit(v, 2000) for v in range(0, 2001)}
    assert limits == {250, 500, 1000, 2000}
    assert round_axis_limit(37, 0) == 64  # rounds unknown yet: powers of two
    assert [_ceiling(x) for x in (2.3, 0.07, 9.9, 0.0, float("nan"))] == [2.5, 0.08, 12, 1, 1]


def test_panel_draws_only_new_points(qtbot, styled_app):
    panel = ChartsPanel(second="accuracy")
    qtbot.addWidget(panel)
    loss = [(v, 2.0 / v) for v in range(1, 101)]
    panel.show_series(loss, loss, [(50, 0.9), (100, 0.95)], total_rounds=600)
    xs, ys = panel.second_curve.getData()
    assert list(xs) == [50, 100] and list(ys) == pytest.approx([90.0, 95.0])
    assert panel.loss_range.x == (0.0, 150.0) and panel.loss_range.y == (0.0, 2.5)
    assert panel.second_range.y == (0.0, 100.0)  # always the whole axis, 100 labelled
    panel.raw_curve.setData([], [])
    panel.show_series(loss, loss, [(50, 0.9), (100, 0.95)], total_rounds=600)
    assert panel.raw_curve.getData()[0] is None or len(panel.raw_curve.getData()[0]) == 0
