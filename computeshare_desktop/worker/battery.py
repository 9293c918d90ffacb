"""Pause while on battery power (``pause_on_battery``, on by default): psutil's reading.

``BatteryWatch.check`` is pure but for its reader, which tests replace with a fake: it
pauses the worker (``PauseSwitch``, reason BATTERY) when the machine goes on battery, and
lifts that pause when it is back on AC. A machine with no battery (a desktop, most VMs) is
never paused. It acts on changes only: a person who resumes on battery trains on, until
the machine has been on AC and goes on battery again. ``BatteryThread`` calls it every
``POLL_S`` seconds on a thread of its own.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, NamedTuple

from .pause import PauseReason, PauseSwitch

log = logging.getLogger(__name__)

POLL_S = 10.0  # how often the power source is read


class Power(NamedTuple):
    """A battery reading: the part of psutil's ``sensors_battery()`` used here."""

    percent: float
    power_plugged: bool | None  # None: unknown (taken as AC: never pause on a guess)


Reader = Callable[[], "Power | None"]


def read_power() -> Power | None:
    """psutil's reading of the battery; None with no battery, no psutil or no sensor."""
    try:
        import psutil
    except ImportError:  # a dependency; a broken install should not stop training
        return None
    try:
        reading = psutil.sensors_battery()
    except (OSError, RuntimeError, AttributeError, NotImplementedError):
        return None
    if reading is None:
        return None
    return Power(float(reading.percent), reading.power_plugged)


class BatteryWatch:
    """Pauses ``switch`` while the machine runs on battery power."""

    def __init__(self, switch: PauseSwitch, reader: Reader = read_power) -> None:
        self.switch = switch
        self.reader = reader
        self.on_battery = False  # as of the last reading

    def check(self) -> bool:
        """Read the power source and act on a change; True while on battery power."""
        power = self.reader()
        on_battery = power is not None and power.power_plugged is False
        if on_battery and not self.on_battery:
            log.warning("on battery power (%.0f%%): pausing until back on AC", power.percent
                        if power is not None else 0)
            self.switch.pause(PauseReason.BATTERY)
        elif self.on_battery and not on_battery:
            log.warning("back on AC power: resuming")
            self.switch.resume(PauseReason.BATTERY)
        self.on_battery = on_battery
        return on_battery


class BatteryThread:
    """A ``BatteryWatch`` checked every ``poll_s`` seconds until ``close()``."""

    def __init__(self, watch: BatteryWatch, poll_s: float = POLL_S,
                 name: str = "battery") -> None:
        self.watch = watch
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> "BatteryThread":
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop and wait for the thread (it is between two readings)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        while True:
            try:
                self.watch.check()
            except Exception:  # noqa: BLE001 - a sensor's fault never ends the training
                log.exception("reading the battery failed: no pause on battery")
                return
            if self._stop.wait(self.poll_s):
                return
