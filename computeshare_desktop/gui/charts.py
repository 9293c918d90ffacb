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
from PySide6.QtCore import QRectF
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
# The accuracy axis: always the whole 0-100 %, with its top labelled, and room above it so a
# curve at 100 % (its dots included) is drawn inside the plot, not on its edge
# What the loss chart's two lines are, in its legend: each round's loss, and its trend
RAW_LOSS, SMOOTH_LOSS = "Each round", "Smoothed"
ACCURACY = (0.0, 100.0)
ACCURACY_TICKS = (0, 25, 50, 75, 100)
ACCURACY_PADDING = 0.08  # of the range, each side: the view runs from -8 to 108
EDGE_TEXT = 10  # px a vertical axis's end labels may reach past the plot (half a line)


class _EdgeAxis(pg.AxisItem):
    """A vertical axis that draws its end labels too. With a grid, pyqtgraph drops any
    label reaching a pixel past the plot, so a short plot lost its "100" (and its "0")."""

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's API
        return super().boundingRect().adjusted(0, -EDGE_TEXT, 0, EDGE_TEXT)
MIN_PLOT_HEIGHT = 110  # a plot shrinks with its panel (at 180 a 1280×720 window cut its axis)


def _plot(title: str, y_label: str) -> pg.PlotWidget:
    plot = pg.PlotWidget(background="w", axisItems={"left": _EdgeAxis("left")})
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


def _legend(plot: pg.PlotWidget, lines: tuple[tuple[pg.PlotDataItem, str], ...]
            ) -> pg.LegendItem:
    """One row in the plot's top right corner, where a falling loss leaves room."""
    legend = plot.getPlotItem().addLegend(offset=(-4, 2), colCount=len(lines),
                                          labelTextSize="8pt", labelTextColor=AXIS,
                                          brush=pg.mkBrush(255, 255, 255, 200))
    for curve, name in lines:
        legend.addItem(curve, name)
    return legend


def _xy(series: Series, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    points = np.asarray(series, dtype=float)
    return points[:, 0], scale * points[:, 1]


class _Ranges:
    """The view range of one plot; ``set`` touches pyqtgraph only when it changes."""

    def __init__(self, plot: pg.PlotWidget, y: tuple[float, float],
                 padding: float = 0.02) -> None:
        self.plot, self.x, self.y, self.padding = plot, (0.0, 10.0), y, padding
        self._apply()

    def set(self, x: tuple[float, float], y: tuple[float, float]) -> None:
        if (x, y) != (self.x, self.y):
            self.x, self.y = x, y
            self._apply()

    def _apply(self) -> None:
        self.plot.setRange(xRange=_padded(self.x, 0.02), yRange=_padded(self.y, self.padding),
                           padding=0.0)


def _padded(span: tuple[float, float], fraction: float) -> tuple[float, float]:
    pad = (span[1] - span[0]) * fraction
    return span[0] - pad, span[1] + pad


class ChartsPanel(QWidget):
    """The loss beside the test accuracy (``second="accuracy"``) or compute time."""

    def __init__(self, *, second: str = "accuracy") -> None:
        super().__init__()
        self.second = second
        self.loss_plot = _plot("Training loss", "loss")
        self.raw_curve = self.loss_plot.plot(pen=pg.mkPen(ACCENT_FAINT, width=1))
        self.loss_curve = self.loss_plot.plot(pen=pg.mkPen(ACCENT, width=2.5))
        self.legend = _legend(self.loss_plot, ((self.raw_curve, RAW_LOSS),
                                               (self.loss_curve, SMOOTH_LOSS)))
        if second == "accuracy":
            self.second_plot = _plot("Test accuracy", "%")
            self.second_curve = self.second_plot.plot(
                pen=pg.mkPen(TEAL, width=2.5), symbol="o", symbolSize=8, symbolBrush=TEAL,
                symbolPen=pg.mkPen("w", width=1.5))
            self.second_plot.getPlotItem().getAxis("left").setTicks(
                [[(float(v), str(v)) for v in ACCURACY_TICKS]])
        else:
            self.second_plot = _plot("Compute time per gradient", "ms")
            self.second_curve = self.second_plot.plot(pen=pg.mkPen(TEAL, width=1.5))
        self.loss_range = _Ranges(self.loss_plot, (0.0, 1.0))
        self.second_range = (_Ranges(self.second_plot, ACCURACY, ACCURACY_PADDING)
                             if second == "accuracy" else _Ranges(self.second_plot, (0.0, 10.0)))
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
            self.second_range.set(x, ACCURACY if accuracy else (0.0, _ceiling(float(ys.max()))))
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
