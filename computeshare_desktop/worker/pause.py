"""Pausing a worker: who asked (its person, the battery watch) and what views say. No Qt.

A paused worker finishes the round it is computing, tells the hub (a BYE that says
``paused``: the hub gives its shard to the others and shows it as paused), and waits. On
Resume it joins again with the key it paired with, so without the PIN, and gets its shard
back when it is still free (its shard cache keeps the samples: little data moves).

``PauseSwitch`` is what the threads share: the person's button (or the CLI's signal) and
the battery watch set it; the worker's driver reads it before each input to the core.
The person's own pause wins over the battery's, and the person's Resume clears both (a
laptop on battery whose person resumes trains on until it goes back on AC and off again).
"""

from __future__ import annotations

import threading
from enum import Enum

from ..events import Event, Paused, Resumed


class PauseReason(str, Enum):
    """Why a worker is paused; the value travels in the ``Paused`` event."""

    YOU = "you"  # its person pressed Pause (or sent the CLI's signal)
    BATTERY = "battery"  # the machine runs on battery power (pause_on_battery)


PAUSE_TEXT = {PauseReason.YOU: "Paused by you",
              PauseReason.BATTERY: "Paused: on battery power — resumes on AC"}


def pause_text(reason: str) -> str:
    """What a window or the CLI says of a pause for ``reason`` (a PauseReason value)."""
    try:
        return PAUSE_TEXT[PauseReason(reason)]
    except ValueError:
        return f"Paused ({reason})"


class PauseSwitch:
    """Whether a worker should be paused, and why; any thread may set or read it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reasons: set[PauseReason] = set()

    @property
    def reason(self) -> PauseReason | None:
        """Why the worker should be paused now (its person's first), or None: train."""
        with self._lock:
            if PauseReason.YOU in self._reasons:
                return PauseReason.YOU
            return PauseReason.BATTERY if self._reasons else None

    def pause(self, reason: PauseReason = PauseReason.YOU) -> None:
        """Pause for ``reason`` (at the end of the round under way)."""
        with self._lock:
            self._reasons.add(reason)

    def resume(self, reason: PauseReason | None = None) -> None:
        """Lift the pause for ``reason``; None (the person's Resume): every reason."""
        with self._lock:
            if reason is None:
                self._reasons.clear()
            else:
                self._reasons.discard(reason)

    def toggle(self) -> PauseReason | None:
        """The person's one control (the CLI's signal): resume when paused for any reason,
        else pause; the reason now."""
        with self._lock:
            resume = bool(self._reasons)
        if resume:
            self.resume()
        else:
            self.pause()
        return self.reason


class PauseView:
    """What a worker's window shows of pausing: folds Paused and Resumed in, and the
    person's clicks (which take effect at the end of the round under way)."""

    def __init__(self) -> None:
        self.paused = False  # the hub has been told: the worker waits
        self.wanted = False  # the person's last click: pause (True) or resume
        self.text = ""  # "" while training

    def apply(self, events: list[Event]) -> bool:
        """Fold a batch of a worker's events in; True if the text changed."""
        before = self.text
        for event in events:
            if isinstance(event, Paused):
                self.paused, self.text = True, pause_text(event.reason)
                self.wanted = self.wanted or event.reason == PauseReason.YOU.value
            elif isinstance(event, Resumed):
                self.paused, self.wanted, self.text = False, False, ""
        return self.text != before

    def clicked(self, pause: bool) -> None:
        """The person asked to pause (True) or to resume."""
        self.wanted = pause
        if pause and not self.paused:
            self.text = "Pausing at the end of this round…"
        elif not pause and self.paused:
            self.text = "Resuming: joining again…"
        elif not pause:
            self.text = ""

    @property
    def button(self) -> str:
        """The Pause/Resume button's label."""
        return "Resume" if self.paused or self.wanted else "Pause"
