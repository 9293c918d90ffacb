"""How long to wait for the hub: timeouts that follow the bytes.

A fixed timeout is wrong in both directions: far too long for a small request to a dead
hub, far too short for a 45 MB push over a busy Wi-Fi link, which then gets sent again and
again. ``LinkMeter`` measures the download rate on real transfers (shard chunks, model
downloads, pushes) and sizes each request's timeout from the bytes it moves, the number of
workers sharing the hub's link, and a safety factor. The heartbeat, which runs on its own
connection, keeps proving the hub is alive while a long transfer is under way.
"""

from __future__ import annotations

import statistics
from collections import deque

MIN_MEASURED_BYTES = 64 * 1024  # smaller transfers measure latency, not bandwidth
ASSUMED_RATE = 125_000.0  # bytes/s (1 Mbit/s) until something was measured
SAFETY = 3.0


class LinkMeter:
    """Transfer rates seen so far, and the timeouts they imply."""

    def __init__(self, base_s: float, *, sharing: int = 1, history: int = 16) -> None:
        self.base_s = base_s
        self.sharing = max(1, sharing)
        self._rates: deque[float] = deque(maxlen=history)

    def observe(self, nbytes: int, seconds: float) -> None:
        """A request whose reply (or upload) moved ``nbytes`` in ``seconds``, no waiting."""
        if nbytes >= MIN_MEASURED_BYTES and seconds > 0:
            self._rates.append(nbytes / seconds)

    @property
    def rate(self) -> float:
        """Median measured bytes/s; 0.0 before any measurement."""
        return statistics.median(self._rates) if self._rates else 0.0

    def timeout_s(self, nbytes: int, wait_s: float = 0.0) -> float:
        """How long a request moving ``nbytes`` may take before it counts as lost.

        The rate is the slower of the measured one and the worst seen, and the hub's link
        is assumed shared by every worker, so a download that all of them make at once
        still fits.
        """
        rate = min(self._rates) if self._rates else ASSUMED_RATE
        return self.base_s + wait_s + SAFETY * self.sharing * nbytes / rate
