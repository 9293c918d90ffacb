"""How often progress is told: at most once per interval, and always when forced (a first
or a last step). Pure: a clock in, a yes or a no out."""

from __future__ import annotations

import time
from typing import Callable


class Throttle:
    """``due()`` is True at most once every ``seconds`` (``force=True``: always), and
    starts the next interval when it says so. ``waiting``: the first interval starts now,
    so nothing is due before it ends unless forced."""

    def __init__(self, seconds: float, *, waiting: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self._clock = seconds, clock
        self._last = clock() if waiting else -float("inf")

    def due(self, force: bool = False) -> bool:
        now = self._clock()
        if force or now - self._last >= self.seconds:
            self._last = now
            return True
        return False
