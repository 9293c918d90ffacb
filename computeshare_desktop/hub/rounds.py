"""One synchronous round: the work handed out, the pushes that match it, when to close, the
average. Pure."""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field

import torch

from ..errors import RemoteProtocolError
from ..protocol import RejectCode
from ..protocol.messages import Push


@dataclass(frozen=True, slots=True)
class Task:
    """One worker's work for one round, sent with the model."""

    version: int
    start: int  # first sample in the shard's stream
    batch: int  # samples per step
    steps: int  # 0: one gradient; H: H local steps
    lr: float  # learning rate of the local steps

    @property
    def samples(self) -> int:
        """Samples the task covers, all steps together."""
        return self.batch * max(1, self.steps)


@dataclass(frozen=True, slots=True)
class Contribution:
    """One accepted update: a gradient, or the weight change of local steps."""

    worker_id: int
    shard: int
    grad: torch.Tensor  # flat float32, finite
    samples: int  # all steps together
    loss: float
    compute_s: float
    stats: torch.Tensor | None = None  # the change of the running statistics (graphs)


@dataclass(slots=True)
class Round:
    """The updates pushed for one model version.

    Its counters change only through the methods below (the hub core and the schedules
    call them), so ``grep`` finds every change to a round here.
    """

    version: int
    opened_at: float
    plan: dict[int, int] = field(default_factory=dict)  # per-step batch by worker id
    lr: float = 0.0  # learning rate of local steps this round
    steps: int = 0  # local steps this round (0: one gradient); the version advances by them
    topk: float = 0.01  # the top-k fraction of this round's pushes (top-k sessions)
    contributions: dict[int, Contribution] = field(default_factory=dict)  # by shard
    first_push_at: float | None = None
    rejected: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    largest_push: int = 0  # payload bytes of the largest push so far
    # The payloads the round needed: each accepted push, and one model per worker. A request
    # sent twice (a timeout too short) counts in bytes_in/out again but not here.
    payload_bytes: int = 0
    served: set[int] = field(default_factory=set)  # workers sent this round's model
    staleness: int = 0  # async: versions between the update's model and this round's

    def add(self, contribution: Contribution, now: float, nbytes: int = 0,
            staleness: int = 0) -> None:
        """Record an update whose payload was ``nbytes`` (``staleness``: async, versions
        between its model and this round's); callers reject a second one for the same
        shard before."""
        self.contributions[contribution.shard] = contribution
        if self.first_push_at is None:
            self.first_push_at = now
        self.largest_push = max(self.largest_push, nbytes)
        self.payload_bytes += nbytes
        self.staleness = staleness

    def received(self, nbytes: int) -> None:
        """A request of ``nbytes`` arrived (a re-sent one counts again)."""
        self.bytes_in += nbytes

    def sent(self, nbytes: int) -> None:
        """A reply of ``nbytes`` went out (a re-sent one counts again)."""
        self.bytes_out += nbytes

    def served_model(self, worker_id: int, nbytes: int) -> None:
        """A worker was sent this round's model of ``nbytes``: its first download counts
        as payload, a re-sent pull does not."""
        if worker_id not in self.served:
            self.served.add(worker_id)
            self.payload_bytes += nbytes

    def refused(self) -> None:
        """A push for this round was rejected."""
        self.rejected += 1

    def complete(self, expected_shards: set[int]) -> bool:
        """True when every expected shard has a gradient (and at least one has)."""
        return bool(self.contributions) and expected_shards <= self.contributions.keys()

    def ordered(self) -> list[Contribution]:
        """The contributions by shard (a fixed order: sums come out the same every time)."""
        return sorted(self.contributions.values(), key=lambda c: c.shard)

    def average(self) -> tuple[torch.Tensor, float]:
        """Sample-weighted mean update and loss of the contributions.

        Weighting by samples makes batches of b1..bN exactly the gradient of one batch of
        b1+..+bN, which is what the linear scaling rule assumes, whatever the split.
        """
        items = self.ordered()
        loss = sum(c.loss * c.samples for c in items) / sum(c.samples for c in items)
        return _weighted_mean(items, [c.grad for c in items]), loss

    def stats_average(self) -> torch.Tensor | None:
        """Sample-weighted mean change of the running statistics (None: none travel).

        Every worker starts the round from the hub's statistics, so adding this change
        makes them the sample-weighted mean of the workers' (the batches' means, weighted
        so, are exactly the union batch's mean).
        """
        items = self.ordered()
        if not items or items[0].stats is None:
            return None
        changes = [c.stats for c in items if c.stats is not None]
        assert len(changes) == len(items), "statistics from every push or from none"
        return _weighted_mean(items, changes)


def _weighted_mean(items: list[Contribution], values: list[torch.Tensor]) -> torch.Tensor:
    """``values`` (one per contribution) averaged with the contributions' samples."""
    total = sum(c.samples for c in items)
    mean = torch.zeros_like(values[0])
    for c, value in zip(items, values, strict=True):
        mean.add_(value, alpha=c.samples / total)
    return mean


def check_push(msg: Push, task: Task, numel: int) -> None:
    """The header of a push must match the work handed out (checked before decoding).

    Raises:
        RemoteProtocolError: BAD_SHAPE, MALFORMED or NOT_FINITE.
    """
    if msg.numel != numel:
        raise RemoteProtocolError(RejectCode.BAD_SHAPE, f"{msg.numel} values, model has {numel}")
    if msg.steps != task.steps:
        raise RemoteProtocolError(RejectCode.MALFORMED,
                                  f"steps={msg.steps}, the round asked for {task.steps}")
    if not (0 < msg.samples <= task.samples):
        raise RemoteProtocolError(RejectCode.MALFORMED,
                                  f"samples={msg.samples}, the round asked for {task.samples}")
    if not (math.isfinite(msg.loss * msg.samples) and math.isfinite(msg.compute_ms)
            and math.isfinite(msg.bandwidth)):
        raise RemoteProtocolError(RejectCode.NOT_FINITE, "loss or timing is not finite")


class DeadlinePolicy:
    """How long a round waits for a worker that has not pushed yet.

    It learns each worker's latency (round opening to its push arriving, stale pushes
    included) and waits ``factor`` times the slowest expected worker's median latency, never
    less than ``floor_s`` after the opening nor ``floor_s`` after the round's first push, plus
    the time the pushes still missing need on the wire at the measured bandwidth, and never
    more than ``cap_s`` (plus that time on the wire). So a steady slow worker is always
    waited for; a dead one is no longer expected after the heartbeat timeout, and a stuck
    one (it heartbeats but never pushes) loses its shard after a few missed deadlines (the
    hub core's watchdog).
    """

    def __init__(self, floor_s: float, factor: float, history: int = 20,
                 cap_s: float = float("inf")) -> None:
        self.floor_s = floor_s
        self.factor = factor
        self.cap_s = cap_s
        self.history = history
        self._latency: dict[int, deque[float]] = {}

    def observe(self, worker_id: int, latency_s: float) -> None:
        """Remember how long a worker took from a round's opening to its push."""
        self._latency.setdefault(worker_id, deque(maxlen=self.history)).append(latency_s)

    def forget(self, worker_id: int) -> None:
        """Drop a worker that left."""
        self._latency.pop(worker_id, None)

    def wait_s(self, expected: set[int]) -> float:
        """The allowance after a round opens, for these expected workers."""
        known = [statistics.median(self._latency[w]) for w in expected if w in self._latency]
        return max(self.floor_s, min(self.cap_s, max([0.0, *(self.factor * lat
                                                               for lat in known)])))

    def deadline(self, opened_at: float, first_push_at: float, expected: set[int],
                 transfer_s: float = 0.0) -> float:
        """When a round opened at ``opened_at`` closes with whatever it has.

        ``transfer_s`` is how long the pushes still missing take to arrive at the measured
        bandwidth: the round never closes on a push that is merely still on the wire.
        """
        return max(opened_at + self.wait_s(expected), first_push_at + self.floor_s + transfer_s)
