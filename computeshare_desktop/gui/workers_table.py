"""The table of workers in a progress window, updated in place from ProgressState rows."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QMenu, QTableWidget,
                               QTableWidgetItem)

from .formatting import ago
from .progress_rows import WorkerRow

COLUMNS = ("Worker", "Device", "Share", "Busy", "Samples/s", "Pushed", "Last seen", "State")
_NUMERIC = {2, 3, 4, 5}
WORKING = ("training", "done")  # rows whose share of the work is shown
TIPS = {2: "Its part of each round's samples: the hub gives faster devices larger batches",
        3: "How much of the last round its device spent computing",
        5: "Updates the hub accepted (and, after a dot, those it refused)"}


KICKABLE = ("joining", "loading data", "ready", "training")  # live rows a host can remove


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
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)  # long names elide
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
                     ago(None if row.last_seen is None else now - row.last_seen), row.state)
            for c, text in enumerate(texts):
                self._set(r, c, text)

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
        action = menu.addAction("Kick from the session")
        action.setToolTip("It leaves now and cannot pair again, even with the PIN")
        action.triggered.connect(lambda: self.kick_requested.emit(worker))
        menu.exec(self.viewport().mapToGlobal(where))

    def _set(self, row: int, column: int, text: str) -> None:
        item = self.item(row, column)
        if item is None:
            item = QTableWidgetItem(text)
            flag = Qt.AlignmentFlag
            align = flag.AlignRight if column in _NUMERIC else flag.AlignLeft
            item.setTextAlignment(align | flag.AlignVCenter)
            self.setItem(row, column, item)
        elif item.text() != text:
            item.setText(text)
