"""Work sized to each device: a faster worker gets a larger batch. Pure.

The global batch of a step stays ``batch_size`` per ready worker; the planner splits it in
proportion to each worker's measured speed (samples per second of compute, the median of
its recent pushes), so that all workers finish a round at about the same time instead of
the fast ones idling while the slowest computes. The split only changes when the predicted
finishing times of the current split differ by more than ``tolerance``, so equal machines
keep equal batches (and seeded runs stay reproducible) despite timing noise.
"""

from __future__ import annotations

import statistics
from collections import deque

MIN_OBSERVATIONS = 3


class WorkPlanner:
    """Per-step batch sizes for the workers of a round."""

    def __init__(self, batch_size: int, *, balance: bool = True, max_factor: float = 4.0,
                 tolerance: float = 0.25, history: int = 10) -> None:
        self.batch_size = batch_size
        self.balance = balance
        self.max_batch = max(1, round(batch_size * max_factor))
        self.tolerance = tolerance
        self._speed: dict[int, deque[float]] = {}
        self._batch: dict[int, int] = {}
        self.history = history

    def observe(self, worker_id: int, samples: int, compute_s: float) -> None:
        """Record a push: ``samples`` computed in ``compute_s`` seconds."""
        if samples > 0 and compute_s > 0:
            self._speed.setdefault(worker_id, deque(maxlen=self.history)).append(
                samples / compute_s)

    def forget(self, worker_id: int) -> None:
        """Drop a worker that left."""
        self._speed.pop(worker_id, None)
        self._batch.pop(worker_id, None)

    def speed(self, worker_id: int) -> float | None:
        """Median samples per second of compute, once there are enough pushes to tell."""
        seen = self._speed.get(worker_id)
        if not seen or len(seen) < MIN_OBSERVATIONS:
            return None
        return statistics.median(seen)

    def plan(self, workers: list[int]) -> dict[int, int]:
        """The per-step batch of each of ``workers`` for the next round."""
        current = {w: self._batch.get(w, self.batch_size) for w in workers}
        speeds = {w: self.speed(w) for w in workers}
        known = {w: s for w, s in speeds.items() if s}
        if self.balance and len(workers) > 1 and len(known) == len(workers):
            finish = [current[w] / known[w] for w in workers]
            if max(finish) > (1 + self.tolerance) * min(finish):
                current = self._split(known)
        self._batch.update(current)
        return current

    def _split(self, speeds: dict[int, float]) -> dict[int, int]:
        """``batch_size * len(speeds)`` samples split in proportion to speed."""
        total = self.batch_size * len(speeds)
        whole = sum(speeds.values())
        share = {w: min(self.max_batch, max(1, round(total * s / whole)))
                 for w, s in speeds.items()}
        # Rounding and the bounds may miss the total: give or take from the fastest.
        for w in sorted(speeds, key=speeds.__getitem__, reverse=True):
            gap = total - sum(share.values())
            if gap == 0:
                break
            share[w] = min(self.max_batch, max(1, share[w] + gap))
        return share
