"""The tests' one fake clock: a callable that returns ``now``, which the test moves on."""

from __future__ import annotations

from typing import Any

T0 = 1000.0  # where a fake clock starts, so "0" never hides a missing `now`


class Clock:
    """A fake ``time.monotonic``/``time.time``: ``clock()`` is ``clock.now``, set or moved on
    by the test; ``wait`` (a driver's sleep) moves it on and says whether ``stop`` is set."""

    def __init__(self, now: float = T0, stop: Any = None) -> None:
        self.now, self.stop = now, stop

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.now += seconds
        return bool(self.stop is not None and self.stop.is_set())
