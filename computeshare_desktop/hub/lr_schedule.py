"""The learning rate over a session: a factor on the base rate for each model version. Pure.

Versions count global steps in every mode (a round of H local steps advances H), so the
schedule is written in versions and a resumed session picks it up where it stood:

* warm-up: the factor rises linearly, ``(v + 1) / warmup`` for the first ``warmup``
  versions (the first step is already a small one, never a step of 0);
* ``constant``: 1 after the warm-up (no warm-up: today's rate throughout);
* ``cosine``: half a cosine from 1 after the warm-up to 0 at ``total``, the session's last
  version (Loshchilov & Hutter 2017, without restarts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SCHEDULES = ("constant", "cosine")


@dataclass(frozen=True, slots=True)
class LrSchedule:
    """The factor of each version's learning rate."""

    kind: str  # "constant" or "cosine"
    warmup: int  # versions of linear warm-up
    total: int  # the session's versions (its rounds): cosine reaches 0 there

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.kind!r}")

    def factor(self, version: int) -> float:
        """The factor on the base rate of the step that starts at ``version``."""
        if version < self.warmup:
            return (version + 1) / self.warmup
        if self.kind == "constant":
            return 1.0
        span = max(1, self.total - self.warmup)
        progress = min(1.0, (version - self.warmup) / span)
        return 0.5 * (1.0 + math.cos(math.pi * progress))


STEADY = LrSchedule("constant", warmup=0, total=1)
"""The base rate at every version (a server built without a session's schedule)."""
