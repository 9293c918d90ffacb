"""The live table of sessions on the LAN: a Qt model over DiscoveredSession values, and the
view that shows it."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSize, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from ..discovery import DiscoveredSession
from ..models.specs import model_label

# Two sessions with one name are told apart by their hub (host and port) and hub key.
COLUMNS = ("Session", "Hub", "Model", "Rounds", "Workers", "State", "Hub key")
_STATE_COLORS = {"open": "#067647", "training": "#4338CA", "full": "#B54708", "done": "#667085"}
ROW_HEIGHT = 30  # as the recent sessions' rows, below it in the same window
ROWS_SHOWN = 3  # whole rows under the header, however small the window

Index = QModelIndex | QPersistentModelIndex


def state_text(session: DiscoveredSession) -> tuple[str, str]:
    """(text, colour key) for a session's state column."""
    advert = session.advert
    if advert.done:
        return "Finished", "done"
    if advert.state == "training":
        rounds = f" · round {advert.round}/{advert.rounds}" if advert.rounds else ""
        if advert.joined == 0:  # every worker left or was removed: it waits, it does not train
            return f"Waiting for workers{rounds}", "open"
        return f"Training{rounds}", "training"
    if advert.full:
        return "Full", "full"
    return "Open: waiting for workers", "open"


class SessionTableModel(QAbstractTableModel):
    """Rows are sessions, sorted as the browser sorts them (by name)."""

    def __init__(self) -> None:
        super().__init__()
        self.sessions: list[DiscoveredSession] = []

    def set_sessions(self, sessions: list[DiscoveredSession]) -> None:
        """Replace the rows; same sessions in the same order only repaint (keeps selection)."""
        same_rows = [s.instance for s in sessions] == [s.instance for s in self.sessions]
        if same_rows and sessions:
            self.sessions = list(sessions)
            last = self.index(len(sessions) - 1, len(COLUMNS) - 1)
            self.dataChanged.emit(self.index(0, 0), last)
            return
        self.beginResetModel()
        self.sessions = list(sessions)
        self.endResetModel()

    def session(self, row: int) -> DiscoveredSession | None:
        """The session at ``row``, if any."""
        return self.sessions[row] if 0 <= row < len(self.sessions) else None

    def row_of(self, instance: str) -> int:
        """The row of an mDNS instance name, or -1."""
        return next((i for i, s in enumerate(self.sessions) if s.instance == instance), -1)

    def row_of_name(self, name: str) -> int:
        """The row of the first session called ``name``, or -1."""
        return next((i for i, s in enumerate(self.sessions) if s.name == name), -1)

    # ----------------------------------------------------------------- Qt model API
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's API
        return 0 if parent.isValid() else len(self.sessions)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's API
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        session = self.session(index.row())
        if session is None:
            return None
        advert, column = session.advert, index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (advert.name, f"{advert.host}:{advert.port}",
                    f"{model_label(advert.model)} · {advert.dataset}",  # an old hub's path
                    f"{advert.rounds:,}" if advert.rounds else "—",
                    f"{advert.joined} / {advert.expected}", state_text(session)[0],
                    advert.key_fingerprint[:8])[column]
        if role == Qt.ItemDataRole.ForegroundRole and column == COLUMNS.index("State"):
            return QColor(_STATE_COLORS[state_text(session)[1]])
        if role == Qt.ItemDataRole.ToolTipRole:
            return (f"{advert.name}\n{session.address}\nhub key {advert.key_fingerprint}\n"
                    f"session {advert.session_id}")
        return None


class SessionsView(QTableView):
    """The sessions table: whole rows selected, read-only, and never so short that fewer
    than ROWS_SHOWN whole rows show under its header (the main window's minimum size)."""

    def __init__(self, model: SessionTableModel) -> None:
        super().__init__()
        self.setModel(model)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(ROW_HEIGHT)
        self.setShowGrid(False)
        self.setAlternatingRowColors(True)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setHighlightSections(False)
        self.setTabKeyNavigation(False)  # Tab leaves the table for the buttons
        self.setAccessibleName("Sessions on your network")

    def rows_height(self, rows: int) -> int:
        """The height that shows ``rows`` whole rows under the header (read when asked:
        the style sheet's font sets the header's height once the view is polished)."""
        header = self.horizontalHeader().sizeHint().height()
        return header + rows * self.verticalHeader().defaultSectionSize() + \
            2 * self.frameWidth()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's API
        hint = super().minimumSizeHint()
        return QSize(hint.width(), max(hint.height(), self.rows_height(ROWS_SHOWN)))
