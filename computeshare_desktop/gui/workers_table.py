"""The table of workers in a progress window, updated in place from ProgressState rows.

Columns are sized by ``fit_columns``: each gets what its header and cells need while the
table is wide enough, the name column takes what is left over; a long name counts as at most
``NAME_MOST`` pixels and elides down to ``NAME_ELIDE`` before another column hides; when the
table is narrower still, the name keeps a fair part of the width and the other text columns
give way. Every cell carries its full text
as a tool tip, so an elided name or count can still be read.
"""

from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QMenu, QTableWidget,
                               QTableWidgetItem)

from .formatting import ago
from .progress_rows import WorkerRow
from .words import row_state

COLUMNS = ("Worker", "Device", "Share", "Busy", "Samples/s", "Pushed", "Last seen", "State")
_NUMERIC = {2, 3, 4, 5}
WORKING = ("training", "done")  # rows whose share of the work is shown
TIPS = {2: "Its part of each round's samples: the hub gives faster devices larger batches",
        3: "How much of the last round its device spent computing",
        5: "Updates the hub accepted (and, after a dot, those it refused)"}


KICKABLE = ("joining", "loading data", "ready", "training")  # live rows a host can remove
NAME_SHARE = 0.3  # the least part of a narrow table's width the name column keeps
NAME_FLOOR = 120  # ... and at least this many pixels, when its names need them
FLOOR = 40  # the least width of a name column in a very narrow table
NAME_MOST = 240  # a name needs at most this many pixels: a longer one elides (tool tip: all)
NAME_ELIDE = 150  # ... and elides down to this width before any other column hides
DROP_ORDER = (3, 6, 4)  # columns hidden first when the table is narrow: Busy, Last seen, rate


def fit_columns(need: Sequence[int], floor: Sequence[int], available: int, *, name: int = 0,
                drop: Sequence[int] = DROP_ORDER) -> list[int]:
    """Widths (0: hidden) for columns that need ``need`` pixels (``floor``: their headers)
    in a viewport ``available`` wide. Pure.

    Column ``name`` needs at most ``NAME_MOST`` (a longer name elides). When everything
    fits with the name at ``NAME_ELIDE`` (or its need, if less), each other column gets its
    need and the name the rest. When it does not, the columns in ``drop`` are hidden one by
    one (the name's tool tip still has their values) until it does. If it still does not,
    the name column keeps ``max(NAME_FLOOR, NAME_SHARE * available)`` (or its need, if
    less) and the other columns shrink toward their floors, in proportion to what they need
    above them: their cells elide, and each cell's tool tip holds its whole text.
    """
    need = list(need)
    need[name] = min(need[name], NAME_MOST)
    widths = list(need)
    least = min(need[name], NAME_ELIDE)  # the name's width before another column hides
    for column in [None, *drop]:
        if column is not None:
            widths[column] = 0
        rest = sum(widths) - widths[name]
        if rest + least <= available:
            widths[name] = available - rest
            return widths
    others = [i for i, w in enumerate(widths) if w and i != name]
    keep = min(need[name], max(NAME_FLOOR, int(NAME_SHARE * available)))
    room = available - keep
    floors = sum(min(need[i], floor[i]) for i in others)
    if room <= floors:  # the floors alone: the name takes what is left
        for i in others:
            widths[i] = min(need[i], floor[i])
        widths[name] = max(FLOOR, available - floors)
        return widths
    slack = sum(need[i] - min(need[i], floor[i]) for i in others)
    cut = max(0, sum(need[i] for i in others) - room) / slack if slack else 0.0
    for i in others:
        widths[i] = need[i] - int((need[i] - min(need[i], floor[i])) * cut + 0.999)
    widths[name] = keep + max(0, room - sum(widths[i] for i in others))
    return widths


class WorkersTable(QTableWidget):
    """One row per worker; cells are rewritten only when their text changes.

    With ``kickable`` (a hub's window) a row can be selected, and its context menu offers
    to kick the worker: ``kick_requested(worker_id)``."""

    kick_requested = Signal(int)

    def __init__(self, kickable: bool = False) -> None:
        super().__init__(0, len(COLUMNS))
        self.setHorizontalHeaderLabels(COLUMNS)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self._ids: list[int] = []  # the worker id of each row
        self._states: list[str] = []
        if kickable:
            self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
            self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
            self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            self.customContextMenuRequested.connect(self._menu)
        else:
            self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
            self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setAlternatingRowColors(True)
        self.setShowGrid(False)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # fit_columns sizes them
        header.setMinimumSectionSize(FLOOR // 2)
        header.setStretchLastSection(False)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header.setHighlightSections(False)
        for column, tip in TIPS.items():
            item = self.horizontalHeaderItem(column)
            if item is not None:
                item.setToolTip(tip)

    def show_rows(self, rows: list[WorkerRow], now: float) -> None:
        """Render the rows (sorted by worker id)."""
        if self.rowCount() != len(rows):
            self.setRowCount(len(rows))
        working = [w for w in rows if w.state in WORKING and w.share]
        total = sum(w.share for w in working) or 1
        ordered = sorted(rows, key=lambda w: w.worker_id)
        self._ids = [w.worker_id for w in ordered]
        self._states = [w.state for w in ordered]
        for r, row in enumerate(ordered):
            rate = row.rate(now)
            share = f"{100 * row.share / total:.0f}% · {row.share}" if row in working else "—"
            texts = (row.name, row.device, share,
                     f"{100 * row.busy:.0f}%" if row.busy is not None else "—",
                     f"{rate:,.0f}" if rate else "—",
                     f"{row.pushed:,}" + (f" · {row.rejected:,} refused" if row.rejected else ""),
                     ago(None if row.last_seen is None else now - row.last_seen),
                     row_state(row.state))
            for c, text in enumerate(texts):
                self._set(r, c, text)
            name = self.item(r, 0)
            if name is not None:  # the whole row: some columns hide in a narrow table
                name.setToolTip("\n".join([row.name] + [f"{COLUMNS[c]}: {text}" for c, text
                                                         in enumerate(texts) if c]))
        self.fit()

    def fit(self) -> None:
        """Size the columns to the viewport (see ``fit_columns``)."""
        header = self.horizontalHeader()
        floor = [header.sectionSizeFromContents(c).width() for c in range(self.columnCount())]
        need = [max(f, self.sizeHintForColumn(c)) for c, f in enumerate(floor)]
        for c, width in enumerate(fit_columns(need, floor, self.viewport().width())):
            if self.isColumnHidden(c) != (width == 0):
                self.setColumnHidden(c, width == 0)
            if width and header.sectionSize(c) != width:
                header.resizeSection(c, width)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's API
        """Refit the columns to the new width."""
        super().resizeEvent(event)
        self.fit()

    def selected_worker(self) -> int | None:
        """The worker id of the selected row, if it is a live worker."""
        rows = {i.row() for i in self.selectedIndexes()}
        return self.kickable_at(rows.pop()) if len(rows) == 1 else None

    def kickable_at(self, row: int) -> int | None:
        """The worker id on ``row`` when that worker can be kicked."""
        if 0 <= row < len(self._ids) and self._states[row] in KICKABLE:
            return self._ids[row]
        return None

    def _menu(self, where: QPoint) -> None:
        worker = self.kickable_at(self.rowAt(where.y()))
        if worker is None:
            return
        menu = QMenu(self)
        action = menu.addAction("Remove from the session…")
        action.setToolTip("It leaves now and cannot take part in this session again, even "
                          "with the PIN, until you choose Allow again")
        action.triggered.connect(lambda: self.kick_requested.emit(worker))
        menu.exec(self.viewport().mapToGlobal(where))

    def _set(self, row: int, column: int, text: str) -> None:
        item = self.item(row, column)
        if item is None:
            item = QTableWidgetItem(text)
            flag = Qt.AlignmentFlag
            align = flag.AlignRight if column in _NUMERIC else flag.AlignLeft
            item.setTextAlignment(align | flag.AlignVCenter)
            item.setToolTip(text)  # the whole text, when the cell elides it
            self.setItem(row, column, item)
        elif item.text() != text:
            item.setText(text)
            if column:
                item.setToolTip(text)
