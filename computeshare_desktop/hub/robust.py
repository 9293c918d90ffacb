"""Robust aggregation: what a round makes of its updates when a worker may be faulty or
hostile (a broken device, a bug, or someone who paired and sends garbage). Pure.

Two defences, used together when a session asks for ``trimmed-mean`` or ``median``:

* **Norm clipping.** An update whose L2 norm is above ``CLIP_FACTOR`` times the median norm
  of the recent updates (the last ``HISTORY`` of every worker, before clipping) is scaled
  down to that bound. An update scaled by 100 then moves the model no further than an honest
  one; a random one still points the wrong way, but only as far as an honest one. While
  fewer than ``MIN_HISTORY`` norms are known the bound is the smallest seen so far, so the
  very first updates cannot throw the model off either.
* **Coordinate-wise trimmed mean** (Yin et al. 2018): for every coordinate the ``k``
  largest and ``k`` smallest values of the round are dropped and the rest averaged, with
  ``k = max(1, n // 4)`` for n >= 3 updates. ``median`` drops all but the middle one (or
  two). Both outvote up to ``k`` bad workers per round; with 2 workers there is no
  majority, and only clipping protects.

The robust rules weigh every update alike (an update is already the mean over its
batch); the plain ``mean`` weighs them by their samples, which keeps synchronous training
exactly equal to one large batch.
"""

from __future__ import annotations

import math
import statistics
from collections import deque

import torch

CLIP_FACTOR = 2.0
HISTORY = 64
MIN_HISTORY = 4


class NormClipper:
    """Scales updates down to CLIP_FACTOR times the median norm of the recent ones."""

    def __init__(self, factor: float = CLIP_FACTOR, history: int = HISTORY) -> None:
        self.factor = factor
        self._norms: deque[float] = deque(maxlen=history)
        self.clipped = 0  # updates scaled down so far

    def bound(self) -> float:
        """The largest norm an update may have now (inf before any was seen)."""
        if not self._norms:
            return float("inf")
        if len(self._norms) < MIN_HISTORY:
            return self.factor * min(self._norms)
        return self.factor * statistics.median(self._norms)

    def clip(self, updates: list[torch.Tensor]) -> list[torch.Tensor]:
        """The updates of one round (or one async update), each within the bound; the
        bound counts this round's norms too, so a first round is protected as well."""
        norms = [float(u.norm()) for u in updates]  # inf: finite values, but huge ones
        self._norms.extend(n for n in norms if math.isfinite(n))
        bound = self.bound()
        out = []
        for update, norm in zip(updates, norms, strict=True):
            if not math.isfinite(norm):
                self.clipped += 1
                update = torch.zeros_like(update)
            elif norm > bound:
                self.clipped += 1
                update = update * (bound / norm)
            out.append(update)
        return out


def trim_count(n: int) -> int:
    """How many values the trimmed mean drops at each end of a coordinate, of ``n``."""
    return max(1, n // 4) if n >= 3 else 0


def combine(updates: list[torch.Tensor], method: str) -> torch.Tensor:
    """One update from several: ``trimmed-mean`` or ``median`` per coordinate (a plain,
    unweighted mean when there are fewer than 3)."""
    n = len(updates)
    if n == 1:
        return updates[0]
    stacked = torch.stack(updates)
    k = (n - 1) // 2 if method == "median" else trim_count(n)
    if k == 0:
        return stacked.mean(dim=0)
    ordered = stacked.sort(dim=0).values
    return ordered[k:n - k].mean(dim=0)
