"""Live curves (pyqtgraph: QtCharts is not in PySide6-Essentials).

Left: the training loss per round, raw (faint) and smoothed. Right: the test accuracy at
each of the hub's evaluations (a worker hears them on the hub's event stream), or, with
``second="compute"``, the time this machine spends computing one gradient.

Why the ranges are set by hand: with auto-range, every new point re-ranges the view and
makes pyqtgraph regenerate its axes in Python. With a session training in the same process
that costs tens of milliseconds of GIL-bound work per redraw, which the event-loop latency
test catches. Here the axes change only when a curve outgrows them (the round axis grows
in steps to 1/8, 1/4, 1/2 and all of the session), so a redraw is little more than one
``drawPath``.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QWidget

ACCENT = "#4F46E5"
ACCENT_FAINT = (79, 70, 229, 70)
TEAL = "#0EA5A4"
AXIS = "#667085"

Series = list[tuple[int, float]]


def round_axis_limit(version: int, total: int) -> int:
    """The end of the round axis: the first of total/8, /4, /2, total past ``version``."""
    if total <= 0:
        return max(10, 2 ** math.ceil(math.log2(max(2, version * 1.1))))
    for fraction in (8, 4, 2):
        if version * 1.05 < total / fraction and total / fraction >= 10:
            return math.ceil(total / fraction)
    return total


AXIS_WIDTH = 64
MIN_PLOT_HEIGHT = 110  # a plot shrinks with its panel (at 180 a 1280×720 window cut its axis)


def _plot(title: str, y_label: str) -> pg.PlotWidget:
    plot = pg.PlotWidget(background="w")
    item = plot.getPlotItem()
    item.setTitle(f"<span style='color:#1F2433;font-size:10pt;font-weight:600'>{title}</span>")
    item.showGrid(x=True, y=True, alpha=0.12)
    item.setLabel("bottom", "round", color=AXIS)
    item.setLabel("left", y_label, color=AXIS)
    item.setMenuEnabled(False)
    item.hideButtons()
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen("#D0D5DD"))
        axis.setTextPen(pg.mkPen(AXIS))
        axis.enableAutoSIPrefix(False)  # "loss", never "loss (x1e-06)"
    item.getAxis("left").setWidth(AXIS_WIDTH)  # room for labels such as 0.00012
    item.setDownsampling(auto=True, mode="peak")  # a long run stays cheap to draw
    item.disableAutoRange()
    plot.setMouseEnabled(x=False, y=False)
    plot.setMinimumHeight(MIN_PLOT_HEIGHT)
    return plot


def _xy(series: Series, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    points = np.asarray(series, dtype=float)
    return points[:, 0], scale * points[:, 1]


class _Ranges:
    """The view range of one plot; ``set`` touches pyqtgraph only when it changes."""

    def __init__(self, plot: pg.PlotWidget, y: tuple[float, float]) -> None:
        self.plot, self.x, self.y = plot, (0.0, 10.0), y
        plot.setRange(xRange=self.x, yRange=self.y, padding=0.02)

    def set(self, x: tuple[float, float], y: tuple[float, float]) -> None:
        if (x, y) != (self.x, self.y):
            self.x, self.y = x, y
            self.plot.setRange(xRange=x, yRange=y, padding=0.02)


class ChartsPanel(QWidget):
    """The loss beside the test accuracy (``second="accuracy"``) or compute time."""

    def __init__(self, *, second: str = "accuracy") -> None:
        super().__init__()
        self.second = second
        self.loss_plot = _plot("Training loss", "loss")
        self.raw_curve = self.loss_plot.plot(pen=pg.mkPen(ACCENT_FAINT, width=1))
        self.loss_curve = self.loss_plot.plot(pen=pg.mkPen(ACCENT, width=2.5))
        if second == "accuracy":
            self.second_plot = _plot("Test accuracy", "%")
            self.second_curve = self.second_plot.plot(
                pen=pg.mkPen(TEAL, width=2.5), symbol="o", symbolSize=8, symbolBrush=TEAL,
                symbolPen=pg.mkPen("w", width=1.5))
        else:
            self.second_plot = _plot("Compute time per gradient", "ms")
            self.second_curve = self.second_plot.plot(pen=pg.mkPen(TEAL, width=1.5))
        self.loss_range = _Ranges(self.loss_plot, (0.0, 1.0))
        self.second_range = _Ranges(self.second_plot,
                                    (0.0, 100.0) if second == "accuracy" else (0.0, 10.0))
        self._shown = (-1, -1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(10)
        layout.addWidget(self.loss_plot, 1)
        layout.addWidget(self.second_plot, 1)

    def show_series(self, loss: Series, smooth: Series, second: Series,
                    total_rounds: int = 0) -> None:
        """Redraw the curves that have new points (each setData repaints its plot)."""
        shown_loss, shown_second = self._shown
        self._shown = (len(loss), len(second))
        last = max(loss[-1][0] if loss else 0, second[-1][0] if second else 0)
        x = (0.0, float(round_axis_limit(last, total_rounds)))
        if loss and len(loss) != shown_loss:
            xs, ys = _xy(loss)
            self.loss_range.set(x, (0.0, _ceiling(float(ys.max()))))
            self.raw_curve.setData(xs, ys, skipFiniteCheck=True)
            self.loss_curve.setData(*_xy(smooth), skipFiniteCheck=True)
        if second and len(second) != shown_second:
            accuracy = self.second == "accuracy"
            xs, ys = _xy(second, 100.0 if accuracy else 1.0)
            low = max(0.0, 10 * math.floor(float(ys.min()) / 10) - 5) if accuracy else 0.0
            high = 100.0 if accuracy else _ceiling(float(ys.max()))
            self.second_range.set(x, (low, high))
            self.second_curve.setData(xs, ys, skipFiniteCheck=True)
        elif x != self.second_range.x:
            self.second_range.set(x, self.second_range.y)


def _ceiling(value: float) -> float:
    """A round number just above ``value`` (a few steps per power of ten)."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    scale = 10 ** math.floor(math.log10(value))
    steps = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 12)
    return next(m * scale for m in steps if m * scale >= value * 1.02)
