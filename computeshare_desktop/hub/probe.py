"""Network checks before pairing (``computeshare doctor``): a short, capped look at the
encrypted port. Pure: messages and ``now`` in, replies out.

A machine that wants to measure its link to a hub has no PIN. It asks on the pairing port
(PROBE with its fresh, throwaway CURVE key); the hub answers with its own public key and lets
that key through the encrypted port's handshake for PROBE_TTL_S, for PROBE messages only
(the core refuses anything else from it, and the events port never admits it). Each PROBE
there echoes at most PROBE_MAX_BYTES back, and a key gets PROBE_MAX_REQUESTS of them. Grants
are rate-limited per source address and few at once, so a stranger on the LAN gets no more
than a doctor run needs. The hub key in the pairing-port answer is not authenticated: it is
good for a measurement, never for trust (pairing proves the hub with the PIN).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..errors import RemoteProtocolError
from ..protocol import RejectCode
from ..protocol.messages import PROBE_MAX_BYTES, Probe, ProbeReply
from ..protocol.wire import Frame

PROBE_TTL_S = 20.0  # how long a granted key may probe
PROBE_MAX_REQUESTS = 64  # probes per granted key
MAX_GRANTS = 4  # keys probing at once
SOURCE_INTERVAL_S = 1.0  # at most one grant per source address per interval
MAX_KEY_CHARS = 40  # a Z85 CURVE public key
_ZEROS = memoryview(bytes(PROBE_MAX_BYTES))  # what an echo carries (CURVE encrypts it anyway)


@dataclass(slots=True)
class _Grant:
    expires: float
    left: int


class ProbeDesk:
    """Grants throwaway keys a short look at the encrypted port, and answers their PROBEs.

    ``allows`` is called from the authenticator's thread, the rest from the hub's loop.
    """

    def __init__(self, hub_key: str, session_id: str, numel: int) -> None:
        self.hub_key, self.session_id, self.numel = hub_key, session_id, numel
        self._grants: dict[str, _Grant] = {}
        self._sources: dict[str, float] = {}
        self._lock = threading.Lock()

    def grant(self, msg: Probe, now: float, source: str | None) -> ProbeReply:
        """A PROBE on the pairing port: let ``msg.key`` probe for PROBE_TTL_S.

        Raises:
            RemoteProtocolError: BUSY (too many at once, or this source asked just now),
                MALFORMED (no key).
        """
        if not msg.key or len(msg.key) != MAX_KEY_CHARS:
            raise RemoteProtocolError(RejectCode.MALFORMED, "a probe needs a CURVE public key")
        with self._lock:
            self._expire(now)
            last = self._sources.get(source or "")
            if last is not None and now - last < SOURCE_INTERVAL_S:
                raise RemoteProtocolError(RejectCode.BUSY, "one network check at a time")
            if len(self._grants) >= MAX_GRANTS and msg.key not in self._grants:
                raise RemoteProtocolError(RejectCode.BUSY, "too many network checks at once")
            self._sources[source or ""] = now
            self._grants[msg.key] = _Grant(now + PROBE_TTL_S, PROBE_MAX_REQUESTS)
        return self._reply(0, PROBE_TTL_S)

    def allows(self, key: str, now: float) -> bool:
        """True while ``key`` holds a live grant (the encrypted port's handshake asks)."""
        with self._lock:
            grant = self._grants.get(key)
            return grant is not None and grant.expires > now and grant.left > 0

    def serve(self, key: str, msg: Probe, body: list[Frame], now: float) -> tuple[ProbeReply,
                                                                                    Frame]:
        """A PROBE on the encrypted port from a granted key: ``msg.size`` bytes back.

        Raises:
            RemoteProtocolError: NOT_PAIRED (no live grant), TOO_LARGE (over the cap).
        """
        with self._lock:
            grant = self._grants.get(key)
            if grant is None or grant.expires <= now or grant.left <= 0:
                raise RemoteProtocolError(RejectCode.NOT_PAIRED, "the network check's time "
                                          "is over")
            grant.left -= 1
            left_s = grant.expires - now
        if msg.size > PROBE_MAX_BYTES or any(len(f) > PROBE_MAX_BYTES for f in body):
            raise RemoteProtocolError(RejectCode.TOO_LARGE, f"a probe moves at most "
                                      f"{PROBE_MAX_BYTES} bytes each way")
        return self._reply(msg.size, left_s), _ZEROS[:msg.size]

    def _reply(self, size: int, ttl: float) -> ProbeReply:
        return ProbeReply(hub_key=self.hub_key, session_id=self.session_id, size=size,
                          numel=self.numel, ttl=ttl)

    def _expire(self, now: float) -> None:
        for key in [k for k, g in self._grants.items() if g.expires <= now or g.left <= 0]:
            del self._grants[key]
        for source in [s for s, t in self._sources.items() if now - t >= SOURCE_INTERVAL_S]:
            del self._sources[source]
