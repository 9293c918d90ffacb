"""The pace behind a progress window's ETA. Pure: times and round numbers in, seconds out.

A session's pace changes with its workers: a worker that leaves slows the rounds, one that
(re)joins first receives the model and its shard, and the rounds before a change say nothing
about the rounds after it. So ``RoundPace`` starts over whenever the set of training workers
changes, leaves out the first ``settle`` rounds after the change (a session's first rounds
too), and measures rounds per second over at most ``window`` recent rounds: a moving average,
steady from round to round, that forgets a stall once the workers change.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable

SETTLE_ROUNDS = 3  # rounds left out after the workers change (model, shard, warm-up)
WINDOW_ROUNDS = 40  # the pace is measured over at most this many recent rounds


class RoundPace:
    """Rounds per second since the workers last changed; ``eta_s`` from it."""

    def __init__(self, *, settle: int = SETTLE_ROUNDS, window: int = WINDOW_ROUNDS) -> None:
        self.settle = max(1, settle)
        self.samples: deque[tuple[float, int]] = deque(maxlen=window)  # (time, round)
        self._team: frozenset[int] | None = None
        self._seen = 0  # rounds since the last change

    def add(self, now: float, version: int, workers: Iterable[int]) -> None:
        """Round ``version`` closed at ``now`` with ``workers`` (ids) training."""
        team = frozenset(workers)
        if team != self._team or (self.samples and version < self.samples[-1][1]):
            self._team, self._seen = team, 0
            self.samples.clear()
        self._seen += 1
        if self._seen >= self.settle:  # the settle-th round's end starts the measure
            self.samples.append((now, version))

    def rounds_per_s(self) -> float | None:
        """The measured pace; None until two rounds after the settling ones are in."""
        if len(self.samples) < 2:
            return None
        (t0, v0), (t1, v1) = self.samples[0], self.samples[-1]
        if v1 <= v0 or t1 <= t0:
            return None
        return (v1 - v0) / (t1 - t0)

    def eta_s(self, remaining: int) -> float | None:
        """Seconds for ``remaining`` more rounds at the measured pace."""
        rate = self.rounds_per_s()
        return None if rate is None else max(0, remaining) / rate
