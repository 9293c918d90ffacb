"""A worker window's Pause/Resume button, and the line that says why the worker is paused.

The button only asks the JoinService (a pause starts at the end of the round under way);
the worker's own events (Paused, Resumed) then say what is true, folded into a
``PauseView`` (Qt-free, worker/pause.py): "Paused by you", or "Paused: on battery power —
resumes on AC" when the battery watch paused it.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtWidgets import QLabel, QPushButton

from ..service import Tagged
from ..worker.pause import PauseView


class Pausable(Protocol):
    """What the control needs of a JoinService."""

    def pause(self) -> None: ...
    def resume(self) -> None: ...


class PauseControl:
    """The button and the reason's label (the window lays them out)."""

    def __init__(self, runner: Pausable) -> None:
        self.runner = runner
        self.view = PauseView()
        self.button = QPushButton("Pause")
        self.button.setToolTip("Pause at the end of this round: the hub gives this machine's "
                               "share to the others; Resume joins again without the PIN")
        self.button.clicked.connect(self.toggle)
        self.label = QLabel()
        self.label.setObjectName("PauseReason")
        self.label.setWordWrap(True)
        self.label.hide()

    def apply(self, events: list[Tagged]) -> None:
        """Fold in the worker's own events of a batch (the hub's feed is not about us)."""
        if self.view.apply([t.event for t in events if t.source == "worker"]):
            self.render()

    def toggle(self) -> None:
        """Pause, or resume when paused (or about to be)."""
        pause = not (self.view.paused or self.view.wanted)
        self.view.clicked(pause)
        (self.runner.pause if pause else self.runner.resume)()
        self.render()

    def render(self) -> None:
        self.button.setText(self.view.button)
        self.label.setText(self.view.text)
        self.label.setVisible(bool(self.view.text))

    def set_active(self, active: bool) -> None:
        """Only a worker still in its session can pause."""
        self.button.setVisible(active)
        if not active:
            self.label.hide()
