"""The hub window's "Removed machines": the machines its session refuses now, each with
"Allow again".

A machine the host removed (Kick) is refused for the rest of this session; one it also
blocked is refused by every session of this hub (hub/blocked.py), and shows here in each of
them until allowed again. "Allow again" lets it pair with the PIN at once. The list comes
from the running session (``runner.removed_machines()``, safe from this thread) and is read
again on every refresh of the window; the card hides while the list is empty.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from ..hub.blocked import RemovedMachine
from .machine_list import MachineList

ALLOWED = "{name} may join again with the PIN."


def describe(machine: RemovedMachine) -> str:
    """One line: its name, where from, and what holds for it."""
    where = f" · {machine.address}" if machine.address else ""
    when = time.strftime("%H:%M", time.localtime(machine.when))
    held = ("blocked from your sessions" if machine.blocked else
            f"removed from this session at {when}")
    return f"{machine.name or 'A machine'}{where} · {held}"


class RemovedMachinesCard(QFrame):
    """The list and its Allow again button; ``runner`` has ``removed_machines()`` and
    ``allow_again(key)`` (service.host.HostService); ``note`` logs what was done."""

    def __init__(self, runner: Any, note: Callable[[str], None]) -> None:
        super().__init__()
        self.setObjectName("Card")
        self.runner = runner
        self.note = note
        self.machines: list[RemovedMachine] = []
        self._allowed: set[str] = set()  # asked for; the session's list follows in a moment
        title = QLabel("Removed machines")
        title.setObjectName("SectionTitle")
        self.list = MachineList("Removed machines", 76)
        self.list.itemSelectionChanged.connect(self._update)
        self.allow_button = QPushButton("Allow again")
        self.allow_button.setToolTip("Let the selected machine join again with the PIN, in "
                                     "this session and later ones")
        self.allow_button.setEnabled(False)
        self.allow_button.clicked.connect(self.allow_selected)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 10, 14, 12)
        row = QHBoxLayout()
        row.addWidget(title, 1)
        row.addWidget(self.allow_button)
        layout.addLayout(row)
        layout.addWidget(self.list)
        self.setVisible(False)

    def refresh(self) -> None:
        """Show the session's list as it is now (the selection kept)."""
        listed = getattr(self.runner, "removed_machines", None)
        machines = list(listed()) if listed is not None else []
        self._allowed &= {m.key for m in machines}
        machines = [m for m in machines if m.key not in self._allowed]
        self.machines = machines
        self.list.show_machines([(m.key, describe(m), m.name) for m in machines])
        self.setVisible(bool(machines))
        self._update()

    def selected_key(self) -> str | None:
        return self.list.selected_key()

    def allow_selected(self) -> bool:
        """Let the selected machine pair again; True when one was selected."""
        key = self.selected_key()
        machine = next((m for m in self.machines if m.key == key), None)
        if machine is None:
            return False
        self.runner.allow_again(machine.key)
        self._allowed.add(machine.key)
        self.note(ALLOWED.format(name=machine.name or "The machine"))
        self.machines = [m for m in self.machines if m.key != machine.key]
        self.list.drop(machine.key)
        self.setVisible(bool(self.machines))
        self._update()
        return True

    def _update(self) -> None:
        self.allow_button.setEnabled(self.selected_key() is not None)
