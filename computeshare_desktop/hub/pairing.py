"""The hub's pairing desk: SPAKE2 runs that end with a worker key on the allowlist.

Pure apart from the clock the caller passes. Guessing is bounded three ways: every wrong
PIN counts towards an exponential lock-out, each run allows one guess only (it is used up
by PAIR_FINISH, right or wrong), and new runs are rate-limited so a flood of PAIR_STARTs
cannot burn the hub's CPU on SPAKE2 arithmetic.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from typing import Any

from ..errors import RemoteProtocolError
from ..protocol import RejectCode, auth
from ..protocol.messages import PairFinish, Paired, PairReply, PairStart
from ..protocol.pake import HubPairing
from .allowlist import Allowlist

log = logging.getLogger(__name__)

PAIRING_TTL_S = 30.0
MAX_OPEN = 16
STARTS_PER_S = 4.0
BURST = 8.0
_Z85_KEY = re.compile(r"[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}")


class PairingDesk:
    """Answers PAIR_START and PAIR_FINISH."""

    def __init__(self, pin: str, session_id: str, hub_key: str, allowlist: Allowlist) -> None:
        self._pin = pin
        self.session_id = session_id
        self.hub_key = hub_key
        self.allowlist = allowlist
        self.lockout = auth.Lockout()
        self._open: OrderedDict[str, tuple[HubPairing, str, float]] = OrderedDict()
        self._tokens = BURST
        self._refilled = 0.0

    def handle(self, msg: Any, now: float) -> Any:
        """The reply to one pairing message; RemoteProtocolError for a refusal."""
        wait = self.lockout.retry_after(now)
        if wait > 0:
            raise RemoteProtocolError(RejectCode.LOCKED_OUT, f"retry in {wait:.0f} s")
        self._expire(now)
        if isinstance(msg, PairStart):
            return self._start(msg, now)
        return self._finish(msg, now)

    def _start(self, msg: PairStart, now: float) -> PairReply:
        self._tokens = min(BURST, self._tokens + (now - self._refilled) * STARTS_PER_S)
        self._refilled = now
        if self._tokens < 1 or len(self._open) >= MAX_OPEN:
            raise RemoteProtocolError(RejectCode.BUSY, "too many pairings at once")
        self._tokens -= 1
        pair_id = auth.new_nonce()
        run = HubPairing(self._pin, msg.msg_a, pair_id)
        self._open[pair_id] = (run, msg.name, now + PAIRING_TTL_S)
        return PairReply(pair_id=pair_id, msg_b=run.msg_b)

    def _finish(self, msg: PairFinish, now: float) -> Paired:
        entry = self._open.pop(msg.pair_id, None)
        if entry is None:
            raise RemoteProtocolError(RejectCode.UNKNOWN_CHALLENGE, "pairing unknown or used")
        run, name, _ = entry
        if not run.verify_worker(msg.worker_key, name, msg.proof):
            self.lockout.failed(now)
            log.warning("wrong PIN from %r (%d in a row); pairing paused for %.0f s", name,
                        self.lockout.failures, self.lockout.retry_after(now))
            raise RemoteProtocolError(RejectCode.BAD_PIN, "wrong PIN")
        if not _Z85_KEY.fullmatch(msg.worker_key):
            raise RemoteProtocolError(RejectCode.MALFORMED, "worker key is not a Z85 key")
        self.allowlist.add(msg.worker_key, name)
        log.info("paired %r (key %s...)", name, msg.worker_key[:8])
        return Paired(hub_key=self.hub_key, session_id=self.session_id,
                      proof=run.hub_proof(self.hub_key, self.session_id))

    def _expire(self, now: float) -> None:
        while self._open:
            pair_id, (_, _, expires) = next(iter(self._open.items()))
            if expires > now:
                break
            del self._open[pair_id]
