"""The main window's "Paired machines": the machines that join this computer's hub without the
PIN, each removable (asked first; its key forgotten: it needs the PIN again), and the switch
that turns the feature off. The list is a file the hub writes as machines pair
(hub/paired_machines.py); the card reads it again every few seconds, and says which is true
when it is empty: no machine paired yet, or none now (removed ones need the PIN again)."""

from __future__ import annotations

import time
from typing import Callable

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (QCheckBox, QFrame, QHBoxLayout, QLabel, QPushButton,
                               QVBoxLayout, QWidget)

from ..hub.paired_machines import PairedMachine, PairedMachines
from ..service.paired import paired_machines
from .confirm import ModalQuestion
from .machine_list import MachineList

REFRESH_MS = 3000
SWITCH = "Paired machines skip the PIN in later sessions"
NEVER = "No machine has paired with this computer's hub yet."
NONE_NOW = "No paired machines now: a removed machine needs the PIN to join again."


def remove_text(name: str) -> str:
    """The question before a Remove, naming the machine as it paired."""
    return (f"Remove {name} from the paired machines? It will need the PIN to join this "
            "computer's sessions again.")


def empty_text(store: PairedMachines) -> str:
    """What the card says with no machine listed: whether one ever paired (and was removed
    or kicked since) or none ever did."""
    return NONE_NOW if store.removed() else NEVER


class RemoveQuestion(ModalQuestion):
    """``ask(parent, name)`` is True when the host confirms the removal."""

    def ask(self, parent: QWidget | None, name: str) -> bool:
        """Show the question modally; Escape, Enter and closing keep the machine."""
        return self.ask_box(parent, "Remove paired machine?", remove_text(name), "Remove",
                            "Keep machine")[0]


def describe(machine: PairedMachine) -> str:
    """One line: the name it paired under, where from, and when."""
    where = machine.address or "this computer"
    when = time.strftime("%d %b %H:%M", time.localtime(machine.paired_at))
    return f"{machine.name} · {where} · paired {when}"


class PairedMachinesCard(QFrame):
    """The list, Remove, and the on/off switch."""

    def __init__(self, store: Callable[[], PairedMachines] = paired_machines) -> None:
        super().__init__()
        self.setObjectName("Card")
        self._store = store
        self.question = RemoveQuestion()
        title = QLabel("Paired machines")
        title.setObjectName("SectionTitle")
        self.enabled_box = QCheckBox(SWITCH)
        self.enabled_box.setToolTip("On: a machine that paired with this computer's hub once "
                                    "joins its later sessions without the PIN. Off: every "
                                    "new session asks for it (the list is kept)")
        self.enabled_box.toggled.connect(self._switch)
        self.list = MachineList("Paired machines", 110)
        self.list.itemSelectionChanged.connect(self._update)
        self.empty = QLabel(NEVER)
        self.empty.setProperty("role", "muted")
        self.problem = QLabel()  # a change that could not be saved, until one can
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Forget the selected machine's key: it needs the PIN "
                                      "to join again")
        self.remove_button.setEnabled(False)
        self.remove_button.clicked.connect(self.remove_selected)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 14, 14)
        for widget in (title, self.list, self.empty, self.problem):
            layout.addWidget(widget)
        buttons = QHBoxLayout()
        buttons.addWidget(self.enabled_box, 1)
        buttons.addWidget(self.remove_button)
        layout.addLayout(buttons)
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.refresh)
        self.timer.start(REFRESH_MS)
        self.refresh()

    def refresh(self) -> None:
        """Show the file as it is now (the selection kept)."""
        store = self._store()
        machines = store.machines()
        self.list.show_machines([(m.key, describe(m), m.name) for m in machines])
        self.list.setVisible(bool(machines))
        self.empty.setText(empty_text(store))
        self.empty.setVisible(not machines)
        self.enabled_box.blockSignals(True)
        self.enabled_box.setChecked(store.enabled)
        self.enabled_box.blockSignals(False)
        self._update()

    def selected_key(self) -> str | None:
        return self.list.selected_key()

    def remove_selected(self) -> bool:
        """Forget the selected machine once the host confirms: its key needs the PIN again.
        True when it was removed."""
        key, name = self.list.selected_key(), self.list.selected_name()
        if key is None:
            return False
        if not self.question.ask(self.window(), name or ""):
            return False
        saved = self._saved(lambda: self._store().forget(key))
        self.refresh()
        return saved

    def _switch(self, on: bool) -> None:
        self._saved(lambda: self._store().set_enabled(on))
        self.refresh()  # the switch shows what the file says

    def _saved(self, change: Callable[[], object]) -> bool:
        """Run one change of the file; a disk error says so on the card (False)."""
        try:
            change()
        except OSError as exc:
            self.problem.setText(f"Could not save the change: {exc.strerror or exc}. Free "
                                 "some space or check the data folder, then try again.")
            self.problem.show()
            return False
        self.problem.hide()
        return True

    def _update(self) -> None:
        self.remove_button.setEnabled(self.selected_key() is not None)
