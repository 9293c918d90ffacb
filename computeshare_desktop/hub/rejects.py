"""Refusals in the log: at most one summary line every LOG_EVERY_S, so a flood of bad
requests cannot flood the log as well. Every refusal is still an event; only the lines are
thinned: a summary counts each code since the last one, with its meaning and the last peer."""

from __future__ import annotations

import logging
from collections import Counter

from ..protocol import MEANINGS, RejectCode

log = logging.getLogger("computeshare_desktop.hub.core")

LOG_EVERY_S = 60.0
REFUSALS_EXTRA = "refusals"  # a summary record's ({code: count}, last peer's key, 8 hex)
# Refusals that are part of normal training (asynchronous updates go stale, a retried push
# arrives twice): never logged here; a host's window sums them up (gui.progress_hub).
ROUTINE = frozenset({RejectCode.STALE, RejectCode.DUPLICATE})


class RejectLog:
    """Logs refusals: the first at once, then one summary line per LOG_EVERY_S at most
    (written by ``note`` or ``flush``, whichever comes first once the interval is over)."""

    def __init__(self) -> None:
        self._last = float("-inf")  # when the last summary was written
        self._counts: Counter[RejectCode] = Counter()
        self._latest: dict[RejectCode, tuple[bytes, str]] = {}  # peer and detail, per code

    def note(self, code: RejectCode, peer: bytes, detail: str, now: float,
             version: int) -> None:
        """Count this refusal (not a ROUTINE one); write the summary if the last one is
        LOG_EVERY_S old."""
        if code in ROUTINE:
            return
        self._counts[code] += 1
        self._latest[code] = (peer, detail)
        self.flush(now, version)

    def flush(self, now: float, version: int) -> None:
        """Write the refusals counted so far, unless a summary went out less than
        LOG_EVERY_S ago (call it from the hub's tick: a lone refusal is not held forever)."""
        if not self._counts or now - self._last < LOG_EVERY_S:
            return
        parts, counts, last_peer = [], {}, ""
        for code, n in sorted(self._counts.items(), key=lambda item: item[0].value):
            peer, detail = self._latest[code]
            why = MEANINGS[code] + (f": {detail}" if detail and detail != MEANINGS[code] else "")
            last_peer = peer.hex()[:8]
            parts.append(f"{n} × {code.value} ({why}; last from peer {last_peer})")
            counts[code.value] = n
        # The counts ride along (``extra``), so a window words them without reading the line.
        log.warning("[hub v%d] refused requests: %s", version, ", ".join(parts),
                    extra={REFUSALS_EXTRA: (counts, last_peer)})
        self._last = now
        self._counts.clear()
        self._latest.clear()
