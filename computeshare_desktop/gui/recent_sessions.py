"""The sessions hosted on this machine, newest first; a stopped one can be resumed."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QFrame, QHBoxLayout, QLabel, QListWidget, QListWidgetItem,
                               QPushButton, QVBoxLayout)

from ..hub.outputs import OutputDir

FOLDER = Qt.ItemDataRole.UserRole


def describe(folder: str, summary: dict) -> tuple[str, bool]:
    """One line for a recent session, and whether it can be resumed: the session by its
    name (by its folder's in a session.json that kept none)."""
    c = summary["config"]
    name = summary.get("host", {}).get("name")
    where = f"round {summary['version']:,} of {c['rounds']:,}"
    state = ("finished" if summary["finished"] else
             "stopped: can be resumed" if summary["resumable"] else "stopped early")
    label = name if isinstance(name, str) and name.strip() else Path(folder).name
    return (f"{label} — {c['model']} on {c['dataset']}, {c['workers']} "
            f"worker(s) · {where} · {state}", bool(summary["resumable"]))


class RecentSessions(QFrame):
    """A list of recent output folders with a Resume button."""

    resume_requested = Signal(str)  # the folder of the session to resume

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("Card")
        title = QLabel("Your recent sessions")
        title.setObjectName("SectionTitle")
        self.list = QListWidget()
        self.list.setAlternatingRowColors(True)
        self.list.itemSelectionChanged.connect(self._update)
        self.list.itemDoubleClicked.connect(lambda _item: self.resume_selected())
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
        layout.addWidget(self.list)
        layout.addLayout(buttons)

    def show_folders(self, folders: list[str]) -> None:
        """List the folders that still hold a session (newest first)."""
        selected = self.selected_folder()
        self.list.clear()
        for folder in folders:
            summary = OutputDir(Path(folder)).summary()
            if summary is None:
                continue
            text, resumable = describe(folder, summary)
            item = QListWidgetItem(text)
            item.setData(FOLDER, (folder, resumable))
            item.setToolTip(folder)
            self.list.addItem(item)
            if folder == selected:
                item.setSelected(True)
        self.setVisible(self.list.count() > 0)
        self._update()

    def selected_folder(self) -> str | None:
        items = self.list.selectedItems()
        return items[0].data(FOLDER)[0] if items else None

    def resume_selected(self) -> None:
        """Ask to resume the selected session, if it can be."""
        items = self.list.selectedItems()
        if items and items[0].data(FOLDER)[1]:
            self.resume_requested.emit(items[0].data(FOLDER)[0])

    def _update(self) -> None:
        items = self.list.selectedItems()
        self.resume_button.setEnabled(bool(items) and bool(items[0].data(FOLDER)[1]))
