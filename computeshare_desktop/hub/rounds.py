"""One synchronous round: collect gradients, decide when to close, average. Pure."""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True, slots=True)
class Contribution:
    """One accepted gradient."""

    worker_id: int
    grad: torch.Tensor  # flat float32, finite
    samples: int
    loss: float
    compute_s: float


@dataclass(slots=True)
class Round:
    """The gradients pushed for one model version."""

    version: int
    opened_at: float
    contributions: dict[int, Contribution] = field(default_factory=dict)
    rejected: int = 0
    bytes_in: int = 0
    bytes_out: int = 0

    def add(self, contribution: Contribution) -> None:
        """Record a gradient; callers reject duplicates before calling."""
        self.contributions[contribution.worker_id] = contribution

    def complete(self, expected: set[int]) -> bool:
        """True when every expected worker has pushed (and at least one has)."""
        return bool(self.contributions) and expected <= self.contributions.keys()

    def average(self) -> tuple[torch.Tensor, float]:
        """Sample-weighted mean gradient and loss of the contributions.

        Weighting by samples makes N equal batches of b exactly the gradient of one batch
        of N*b, which is what the linear scaling rule assumes.
        """
        items = sorted(self.contributions.values(), key=lambda c: c.worker_id)
        total = sum(c.samples for c in items)
        grad = torch.zeros_like(items[0].grad)
        for c in items:
            grad.add_(c.grad, alpha=c.samples / total)
        loss = sum(c.loss * c.samples for c in items) / total
        return grad, loss


class DeadlinePolicy:
    """How long a round waits for a worker that has not pushed.

    The wait adapts to the session: ``factor`` times the median duration of recent rounds
    that every expected worker completed, never less than ``floor_s``. A dead or stuck
    worker costs at most that much once; after the heartbeat timeout it is no longer expected.
    """

    def __init__(self, floor_s: float, factor: float, history: int = 20) -> None:
        self.floor_s = floor_s
        self.factor = factor
        self._durations: deque[float] = deque(maxlen=history)

    def record(self, duration_s: float) -> None:
        """Remember how long a complete round took."""
        self._durations.append(duration_s)

    def wait_s(self) -> float:
        """The current allowance after a round opens."""
        if not self._durations:
            return self.floor_s
        return max(self.floor_s, self.factor * statistics.median(self._durations))

    def deadline(self, opened_at: float) -> float:
        """When a round opened at ``opened_at`` closes with whatever it has."""
        return opened_at + self.wait_s()
