"""Refusals in the log: one line per reject code every LOG_EVERY_S, so a flood of bad
requests cannot flood the log as well. Every refusal is still an event; only the lines are
thinned, with a count of what was left out."""

from __future__ import annotations

import logging

from ..protocol import RejectCode

log = logging.getLogger("computeshare_desktop.hub.core")

LOG_EVERY_S = 5.0


class RejectLog:
    """Logs refusals, at most one line per code per LOG_EVERY_S."""

    def __init__(self) -> None:
        self._gate: dict[RejectCode, tuple[float, int]] = {}  # last logged, suppressed

    def note(self, code: RejectCode, peer: bytes, detail: str, now: float,
             version: int) -> None:
        """Log this refusal unless its code was logged less than LOG_EVERY_S ago."""
        last, suppressed = self._gate.get(code, (float("-inf"), 0))
        if now - last < LOG_EVERY_S:
            self._gate[code] = (last, suppressed + 1)
            return
        self._gate[code] = (now, 0)
        more = f" (+{suppressed} more since the last report)" if suppressed else ""
        log.warning("[hub v%d] rejected %s from peer %s: %s%s", version, code.value,
                    peer.hex()[:8], detail, more)
