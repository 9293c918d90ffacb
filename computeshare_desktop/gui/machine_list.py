"""A list of machines by their key, as the main window's Paired machines and the hub
window's Removed machines show them: one line each, the key's start as its tool tip, and
the selection kept when the list is filled again."""

from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QListWidget, QListWidgetItem

KEY = Qt.ItemDataRole.UserRole
NAME = Qt.ItemDataRole.UserRole + 1  # the name it paired under, for a question about it

Line = tuple[str, str, str]  # (key, the line shown, the machine's name)


class MachineList(QListWidget):
    """``show_machines(lines)``; ``selected_key()``, ``selected_name()``."""

    def __init__(self, name: str, height: int) -> None:
        super().__init__()
        self.setAccessibleName(name)
        self.setMaximumHeight(height)

    def lines(self) -> list[Line]:
        """What the list shows now."""
        return [(item.data(KEY), item.text(), item.data(NAME))
                for item in map(self.item, range(self.count()))]

    def show_machines(self, lines: Sequence[Line]) -> None:
        """Show ``lines`` (filled again only when they changed; the selection kept)."""
        if list(lines) == self.lines():
            return
        selected = self.selected_key()
        self.clear()
        for key, text, name in lines:
            item = QListWidgetItem(text)
            item.setData(KEY, key)
            item.setData(NAME, name)
            item.setToolTip(f"Key {key[:8]}…")
            self.addItem(item)
            item.setSelected(key == selected)

    def drop(self, key: str) -> None:
        """Take ``key``'s line out now (its store follows in a moment)."""
        for row in reversed([i for i in range(self.count()) if self.item(i).data(KEY) == key]):
            self.takeItem(row)

    def selected_key(self) -> str | None:
        items = self.selectedItems()
        return items[0].data(KEY) if items else None

    def selected_name(self) -> str | None:
        items = self.selectedItems()
        return items[0].data(NAME) if items else None
