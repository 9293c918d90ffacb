"""Asynchronous mode: each worker's update is applied as soon as it arrives. Pure.

No worker waits for another: a fast machine pushes more often, a slow or vanished one holds
nobody up. Every update becomes one optimizer step and one model version (a "round" here
is one worker's batch), computed on the version the worker downloaded, which may be a few
versions old by the time it arrives:

* **Staleness bound.** An update more than ``max_staleness`` versions old is refused
  (STALE); the worker downloads the newest model and carries on.
* **Running statistics** (graphs with BatchNorm): each update's change of the statistics
  is added as it arrives, in full, like a synchronous round of one worker. It was
  measured from the statistics that worker downloaded, so a stale one pulls the hub's
  toward its batches a little less than it would have at its own version; the statistics
  are averages already, and no staleness factor is put on them.
* **Staleness-aware learning rate** (after Zhang et al., IJCAI 2016, "Staleness-aware
  Async-SGD"). With N workers, an update is normally about N - 1 versions old: each of
  the others pushed once meanwhile, as they would have in one synchronous round, and the
  linear scaling rule already accounts for that. Such an update gets the full learning
  rate; an older one gets it divided by its staleness in rounds,
  ``min(1, N / (staleness + 1))``.

``metrics.jsonl`` records each update's staleness, and every ``eval_every`` versions the
histogram so far (``{"type": "staleness", ...}``).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Sequence

import torch

from ..errors import RemoteProtocolError
from ..protocol import RejectCode
from ..protocol.messages import Push
from ..protocol.wire import Frame
from .membership import Member
from .rounds import Round
from .schedule import Schedule

log = logging.getLogger(__name__)


def staleness_scale(staleness: int, workers: int) -> float:
    """The factor on the learning rate of an update ``staleness`` versions old."""
    return min(1.0, max(1, workers) / (staleness + 1))


class AsyncSchedule(Schedule):
    """A Schedule whose rounds close on their first update, taken from any recent version."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.histogram: Counter[int] = Counter()  # accepted updates by staleness
        self.refused = 0  # updates older than the bound
        self.started_at: float | None = None

    def open(self, now: float, ready: list[Member]) -> None:
        """The next version (the clock of the watchdog starts with the first)."""
        super().open(now, ready)
        if self.started_at is None:
            self.started_at = now

    def _batches(self, plan: dict[int, int]) -> dict[int, int]:
        """Every worker's task is a nominal batch (a faster worker simply pushes more
        often)."""
        return {}

    def accept(self, member: Member, msg: Push, body: Sequence[Frame], shard_size: int,
               now: float) -> None:
        """Take an update computed on any version within the bound."""
        version = self.server.version
        if msg.version > version:
            raise RemoteProtocolError(RejectCode.BAD_VERSION, f"current version is {version}")
        if msg.version <= member.pushed_version:  # a re-sent push whose reply was lost
            raise RemoteProtocolError(RejectCode.DUPLICATE,
                                      f"version {msg.version} already pushed")
        staleness = version - msg.version
        if staleness > self.config.max_staleness:
            self.refused += 1
            raise RemoteProtocolError(
                RejectCode.STALE, f"{staleness} versions old; the bound is "
                                  f"{self.config.max_staleness} (current version {version})")
        task = member.task
        if task is None or task.version != msg.version:
            raise RemoteProtocolError(RejectCode.STALE,
                                      f"version {msg.version} is not the work handed out")
        self._add(member, msg, body, task, now, staleness)

    def due(self, now: float, ready: list[Member]) -> bool | None:
        """A version closes on its first update."""
        return True if self.round.contributions else None

    def _step(self, rnd: Round, update: torch.Tensor, samples: int,
              stats: torch.Tensor | None = None) -> None:
        self.server.step(update, samples, steps=1, topk=rnd.topk,
                         scale=staleness_scale(rnd.staleness, self.config.workers), stats=stats)
        self.histogram[rnd.staleness] += 1

    def _round_extras(self, rnd: Round) -> dict[str, Any]:
        """The update's staleness and rate, and every eval_every versions the histogram."""
        extras: dict[str, Any] = {"staleness": rnd.staleness,
                                  "lr_scale": staleness_scale(rnd.staleness,
                                                              self.config.workers)}
        version, every = self.server.version, self.config.eval_every
        if version >= self.config.rounds or (every and version % every == 0):
            extras["staleness_histogram"] = self.staleness_summary()
        return extras

    def staleness_summary(self) -> dict[str, Any]:
        """The histogram so far: accepted updates by staleness, and those refused."""
        return {"counts": {str(k): v for k, v in sorted(self.histogram.items())},
                "refused": self.refused, "bound": self.config.max_staleness}

    def stuck(self, pushed: set[int], ready: list[Member]) -> list[Member]:
        """No deadlines in async mode: see ``idle``."""
        return []

    def idle(self, now: float, ready: list[Member]) -> list[Member]:
        """Members that pushed nothing for max_missed deadline caps (alive, but stuck):
        they hold nobody up, but their shard goes untrained."""
        if self.started_at is None:
            return []
        limit = self.config.max_missed * self.config.deadline_cap_s
        return [m for m in ready if now - max(m.progress_at, self.started_at) > limit]
