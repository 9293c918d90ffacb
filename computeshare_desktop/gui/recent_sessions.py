"""The sessions hosted on this machine, newest first, as a table: name, model, data, round of
total, state (Running, Stopped, Finished) and when; a Stopped one can be resumed.

A session that runs now (in this app, another instance of it, or ``computeshare host``) holds
its folder's lock (hub/folder_lock.py): it reads "Running" and offers no Resume, which would
start a second hub over its files. The table looks at the locks every few seconds, so a
session that ends elsewhere becomes Stopped by itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QAbstractItemView, QFrame, QHBoxLayout, QHeaderView, QLabel,
                               QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout)

from ..data.folders import dataset_label
from ..hub.folder_lock import holder
from ..hub.outputs import METRICS_FILE, SESSION_FILE, OutputDir
from ..models.specs import model_label

COLUMNS = ("Name", "Model", "Data", "Round", "State", "When")
ROWS_SHOWN = 5  # the table is at least this many rows high
ROW_HEIGHT = 30
LOCK_POLL_MS = 2_000
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True, slots=True)
class RecentRow:
    """One recent session as the table shows it."""

    folder: str
    name: str
    model: str  # the file's name, never the folders above it
    data: str
    round: str  # "1,690 of 2,500"
    state: str  # Running, Stopped or Finished
    when: str  # "today 14:02", "3 Dec 09:15"
    resumable: bool  # Stopped with a checkpoint
    note: str  # the tooltip: the folder, and why there is no Resume


def when_text(stamp: float, now: float) -> str:
    """A moment as people read it, in local time: "today 14:02", "yesterday 09:15",
    "3 Dec 09:15" this year, "3 Dec 2025" before."""
    then, today = time.localtime(stamp), time.localtime(now)
    clock = f"{then.tm_hour:02d}:{then.tm_min:02d}"
    day = time.strftime("%Y-%m-%d", then)
    if day == time.strftime("%Y-%m-%d", today):
        return f"today {clock}"
    if day == time.strftime("%Y-%m-%d", time.localtime(now - 86_400)):
        return f"yesterday {clock}"
    date = f"{then.tm_mday} {MONTHS[then.tm_mon - 1]}"
    return f"{date} {clock}" if then.tm_year == today.tm_year else f"{date} {then.tm_year}"


def last_written(folder: Path) -> float:
    """When the session last wrote its metrics (else its session.json); 0 if neither."""
    for name in (METRICS_FILE, SESSION_FILE):
        try:
            return (folder / name).stat().st_mtime
        except OSError:
            continue
    return 0.0


def recent_row(folder: str, summary: dict[str, Any], now: float) -> RecentRow:
    """The row of a session's folder (``OutputDir.summary``): by its name (its folder's in
    a session.json that kept none)."""
    c = summary["config"]
    name = summary.get("host", {}).get("name")
    label = name if isinstance(name, str) and name.strip() else Path(folder).name
    running = summary.get("running")
    if running is not None:
        state, note = "Running", f"Running now ({running.text()}): stop it in its window " \
                                 "to resume it later"
    elif summary["finished"]:
        state, note = "Finished", "Finished: its model is saved"
    else:
        state, note = "Stopped", ("Stopped: Resume continues it from its last checkpoint"
                                  if summary["resumable"] else
                                  "Stopped before its first checkpoint: nothing to resume")
    stamp = last_written(Path(folder))
    return RecentRow(folder, label, model_label(str(c["model"])),
                     dataset_label(str(c["dataset"])),
                     f"{summary['version']:,} of {c['rounds']:,}", state,
                     when_text(stamp, now) if stamp else "—", bool(summary["resumable"]),
                     f"{folder}\n{note}")


class RecentSessions(QFrame):
    """A table of recent output folders with a Resume button."""

    resume_requested = Signal(str)  # the folder of the session to resume

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("Card")
        self.rows: list[RecentRow] = []
        self.folders: list[str] = []
        title = QLabel("Your recent sessions")
        title.setObjectName("SectionTitle")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setAccessibleName("Your recent sessions")
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table for Resume
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(ROW_HEIGHT)
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        header.setMinimumSectionSize(40)
        for column in range(len(COLUMNS)):  # name, model and data share what is left
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch
                                        if column < 3 else QHeaderView.ResizeMode.ResizeToContents)
        self.table.setMinimumHeight(self.rows_height(ROWS_SHOWN))
        self.table.itemSelectionChanged.connect(self._update)
        self.table.itemDoubleClicked.connect(lambda _item: self.resume_selected())
        self.resume_button = QPushButton("Resume")
        self.resume_button.setToolTip("Continue the selected session from its last checkpoint")
        self.resume_button.setEnabled(False)
        self.resume_button.clicked.connect(self.resume_selected)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.resume_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 14, 14)
        layout.addWidget(title)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        self.timer = QTimer(self)  # a session that starts or ends elsewhere shows
        self.timer.timeout.connect(self._check_locks)
        self.timer.start(LOCK_POLL_MS)

    def rows_height(self, rows: int) -> int:
        """The table's height that shows ``rows`` whole rows under its header."""
        header = self.table.horizontalHeader().sizeHint().height()
        return header + rows * ROW_HEIGHT + 2 * self.table.frameWidth() + 2

    def show_folders(self, folders: list[str]) -> None:
        """List the folders that still hold a session (newest first)."""
        selected = self.selected_folder()
        self.folders = list(folders)
        now = time.time()
        self.rows = []
        for folder in folders:
            summary = OutputDir(Path(folder)).summary()
            if summary is not None:
                self.rows.append(recent_row(folder, summary, now))
        self.table.setRowCount(len(self.rows))
        for r, row in enumerate(self.rows):
            for c, text in enumerate((row.name, row.model, row.data, row.round, row.state,
                                      row.when)):
                item = QTableWidgetItem(text)
                item.setToolTip(row.note)
                if c >= 3:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight
                                          | Qt.AlignmentFlag.AlignVCenter if c == 3 else
                                          Qt.AlignmentFlag.AlignLeft
                                          | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, item)
            if row.folder == selected:
                self.table.selectRow(r)
        self.setVisible(bool(self.rows))
        self._update()

    def row(self, index: int) -> RecentRow | None:
        """The session shown at row ``index``, if any."""
        return self.rows[index] if 0 <= index < len(self.rows) else None

    def selected(self) -> RecentRow | None:
        """The selected session, if any."""
        rows = self.table.selectionModel().selectedRows()
        return self.row(rows[0].row()) if rows else None

    def selected_folder(self) -> str | None:
        chosen = self.selected()
        return chosen.folder if chosen else None

    def resume_selected(self) -> None:
        """Ask to resume the selected session, if it can be (read again now: it may have
        started elsewhere since the table was drawn)."""
        chosen = self.selected()
        if chosen is None or not chosen.resumable:
            return
        if holder(chosen.folder) is not None:
            self.show_folders(self.folders)
            return
        self.resume_requested.emit(chosen.folder)

    def _check_locks(self) -> None:
        if any((holder(row.folder) is not None) != (row.state == "Running")
               for row in self.rows):
            self.show_folders(self.folders)

    def _update(self) -> None:
        chosen = self.selected()
        self.resume_button.setEnabled(chosen is not None and chosen.resumable)
        self.resume_button.setToolTip(chosen.note.partition("\n")[2] if chosen else
                                      "Continue the selected session from its last "
                                      "checkpoint")
