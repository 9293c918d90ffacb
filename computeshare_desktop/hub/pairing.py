"""The hub's pairing desk: SPAKE2 runs that end with a worker key on the allowlist.

Pure apart from the clock the caller passes. Guessing is bounded three ways: every wrong
PIN counts towards an exponential lock-out, each run allows one guess only (it is used up
by PAIR_FINISH, right or wrong), and new runs are rate-limited so a flood of PAIR_STARTs
cannot burn the hub's CPU on SPAKE2 arithmetic.

Starving real workers is bounded too. A run lives PAIRING_TTL_S (a real worker finishes in
milliseconds); each source address has its own start rate and may hold PER_SOURCE_OPEN runs
(a new start replaces its oldest). An address's first start after a quiet spell is a
newcomer's: it does not wait for the shared rate, and when every slot is taken it evicts
the oldest run, while addresses that keep starting runs wait for a free slot. So a flood
keeps a newcomer out for no longer than it takes to pair. This machine's own
worker (a loopback source) is exempt from the shared limits and from the LAN's lock-out,
and its runs are never evicted by others: the host always trains. Loopback sources have a
lock-out of their own, so a local process cannot guess the PIN faster than a remote one.

A removed key is refused, and so is the address it paired from (loopback excepted): a
removed machine cannot come back under a new key and name with the PIN it knows, in this
session (BANNED) or, when the host blocked it, in any of the hub's sessions (BLOCKED), until
the host allows it again.
"""

from __future__ import annotations

import logging
import math
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..errors import RemoteProtocolError
from ..protocol import MEANINGS, RejectCode, auth
from ..protocol.messages import PairFinish, Paired, PairReply, PairStart
from ..protocol.pake import HubPairing
from .allowlist import Allowlist

log = logging.getLogger(__name__)

PAIRING_TTL_S = 5.0  # an unfinished run is dropped after this long
MAX_OPEN = 16  # unfinished runs at once, all sources together
PER_SOURCE_OPEN = 2  # unfinished runs one source address may hold
STARTS_PER_S = 16.0  # new runs per second, all sources together (bounds the CPU spent)
BURST = 16.0
SOURCE_STARTS_PER_S = 1.0  # new runs per second from one source address
SOURCE_BURST = 4.0
MAX_SOURCES = 1024  # rate buckets kept; the least recently seen is forgotten first
LOCAL_SOURCES = frozenset({"127.0.0.1", "::1", "::ffff:127.0.0.1"})
_Z85_KEY = re.compile(r"[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}")


class _Bucket:
    """A token bucket: ``rate`` tokens a second, at most ``burst``."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self.refilled = burst, None  # type: float, float | None

    def wait(self, now: float) -> float:
        """Seconds until a token is there (0: take one now with ``take``)."""
        if self.refilled is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.refilled) * self.rate)
        self.refilled = now
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    def take(self) -> None:
        self.tokens -= 1


@dataclass(slots=True)
class _Run:
    pairing: HubPairing
    name: str
    source: str
    expires: float


class PairingDesk:
    """Answers PAIR_START and PAIR_FINISH."""

    def __init__(self, pin: str, session_id: str, hub_key: str, allowlist: Allowlist) -> None:
        self._pin = pin
        self.session_id = session_id
        self.hub_key = hub_key
        self.allowlist = allowlist
        self.lockout = auth.Lockout()  # wrong PINs from the LAN
        self.local_lockout = auth.Lockout()  # wrong PINs from this machine
        self._open: OrderedDict[str, _Run] = OrderedDict()
        self._bucket = _Bucket(STARTS_PER_S, BURST)
        self._sources: OrderedDict[str, _Bucket] = OrderedDict()
        self.evicted = 0  # runs dropped to make room (a sign of a flood)

    def set_pin(self, pin: str) -> None:
        """A new PIN: runs begun with the old one can no longer finish."""
        self._pin = pin
        self._open.clear()

    def handle(self, msg: Any, now: float, source: str | None = None) -> Any:
        """The reply to one pairing message from ``source`` (the peer's IP address, when
        the transport knows it); RemoteProtocolError for a refusal."""
        source = source or "?"
        local = source in LOCAL_SOURCES
        wait = self.lockout_for(source).retry_after(now)
        if wait > 0:
            raise RemoteProtocolError(RejectCode.LOCKED_OUT, f"retry in {math.ceil(wait)} s")
        self._expire(now)
        if isinstance(msg, PairStart):
            return self._start(msg, now, source, local)
        return self._finish(msg, now, source, local)

    def lockout_for(self, source: str | None) -> auth.Lockout:
        """The lock-out that counts wrong PINs from ``source``."""
        return self.local_lockout if source in LOCAL_SOURCES else self.lockout

    def _start(self, msg: PairStart, now: float, source: str, local: bool) -> PairReply:
        refused = self.allowlist.address_refusal(source)
        if refused is not None:
            raise RemoteProtocolError(refused, "a worker from this address was removed from "
                                      "the session" if refused is RejectCode.BANNED else
                                      "the host blocked a worker from this address")
        bucket = self._source_bucket(source)
        wait = bucket.wait(now)
        # An address that has been quiet (its own allowance is whole) is a newcomer: it
        # skips the shared rate and may evict the oldest run when every slot is taken.
        # Addresses that keep starting runs share the rest, and wait for a free slot.
        fresh = local or bucket.tokens >= bucket.burst
        wait = max(wait, 0.0 if fresh else self._bucket.wait(now))
        if wait > 0:
            raise RemoteProtocolError(RejectCode.BUSY, f"too many pairings at once; retry in "
                                                       f"{wait:.1f} s")
        own = [pid for pid, r in self._open.items() if r.source == source]
        if len(own) >= PER_SOURCE_OPEN:  # a new start from an address replaces its oldest
            self._evict(own[0])
        if len(self._open) >= MAX_OPEN:
            victims = [pid for pid, r in self._open.items()
                       if local or r.source not in LOCAL_SOURCES]
            if not fresh or not victims:
                first = min(r.expires for r in self._open.values())
                raise RemoteProtocolError(RejectCode.BUSY, f"every pairing slot is taken; "
                                                           f"retry in {first - now:.1f} s")
            self._evict(victims[0])
        bucket.take()
        if not fresh:
            self._bucket.take()
        pair_id = auth.new_nonce()
        run = HubPairing(self._pin, msg.msg_a, pair_id)
        self._open[pair_id] = _Run(run, msg.name, source, now + PAIRING_TTL_S)
        return PairReply(pair_id=pair_id, msg_b=run.msg_b)

    def _source_bucket(self, source: str) -> _Bucket:
        bucket = self._sources.pop(source, None) or _Bucket(SOURCE_STARTS_PER_S, SOURCE_BURST)
        self._sources[source] = bucket  # most recently seen last
        while len(self._sources) > MAX_SOURCES:
            self._sources.popitem(last=False)
        return bucket

    def _evict(self, pair_id: str) -> None:
        run = self._open.pop(pair_id)
        self.evicted += 1
        log.debug("pairing run from %s evicted to make room", run.source)

    def _finish(self, msg: PairFinish, now: float, source: str, local: bool) -> Paired:
        entry = self._open.pop(msg.pair_id, None)
        if entry is None:
            raise RemoteProtocolError(RejectCode.UNKNOWN_CHALLENGE, "pairing unknown or used")
        refused = self.allowlist.refusal(msg.worker_key)
        if refused is not None:
            raise RemoteProtocolError(refused, MEANINGS[refused])
        if not entry.pairing.verify_worker(msg.worker_key, entry.name, msg.proof):
            lockout = self.lockout_for(source)
            lockout.failed(now)
            paused = math.ceil(lockout.retry_after(now))  # 0: the next try may come at once
            log.warning("Wrong PIN from %r at %s (%d in a row)%s", entry.name, entry.source,
                        lockout.failures, f"; pairing paused for {paused} s" if paused else "")
            raise RemoteProtocolError(RejectCode.BAD_PIN, "wrong PIN")
        if not _Z85_KEY.fullmatch(msg.worker_key):
            raise RemoteProtocolError(RejectCode.MALFORMED, "worker key is not a Z85 key")
        self.allowlist.pair(msg.worker_key, entry.name, None if local else entry.source)
        log.info("paired %r from %s (key %s...)", entry.name, entry.source, msg.worker_key[:8])
        return Paired(hub_key=self.hub_key, session_id=self.session_id,
                      proof=entry.pairing.hub_proof(self.hub_key, self.session_id))

    def _expire(self, now: float) -> None:
        for pair_id in [pid for pid, r in self._open.items() if r.expires <= now]:
            del self._open[pair_id]
