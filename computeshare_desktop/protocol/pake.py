"""PIN pairing with a PAKE (SPAKE2) and key confirmation. Pure: no sockets, no clock.

Both sides turn the PIN into the same 32-byte key without the PIN (or any hash of it)
crossing the wire, and an eavesdropper who records the whole exchange cannot test PINs
offline: each run of the handshake lets an active attacker try exactly one PIN. The key
then authenticates what pairing is for, the exchange of long-term CURVE public keys: the
worker's proof covers its public key, the hub's proof covers the hub's public key, so a
man in the middle cannot substitute either.

Flow (worker = SPAKE2 side A, hub = side B)::

    PAIR_START  {msg_a, name}                         worker -> hub
    PAIR_REPLY  {pair_id, msg_b}                      hub -> worker
    PAIR_FINISH {pair_id, worker_key, proof_w}        worker -> hub   (hub verifies)
    PAIRED      {hub_key, session_id, proof_h}        hub -> worker   (worker verifies)

The worker proves first, so every wrong PIN is seen (and counted) by the hub.
"""

from __future__ import annotations

import hashlib
import hmac

from spake2 import SPAKE2_A, SPAKE2_B

from ..errors import RemoteProtocolError
from .codes import RejectCode

ID_WORKER = b"computeshare-worker-v1"
ID_HUB = b"computeshare-hub-v1"
MSG_HEX_CHARS = 66  # a SPAKE2 message is 33 bytes


def _proof(key: bytes, role: bytes, *parts: str) -> str:
    data = role + b"\0" + b"\0".join(p.encode("utf-8") for p in parts)
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def _unhex(text: str, what: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise RemoteProtocolError(RejectCode.MALFORMED, f"{what} is not hex") from None


def _equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"),
                               b.encode("utf-8", "surrogatepass"))


class WorkerPairing:
    """The worker's side of one pairing run."""

    def __init__(self, pin: str) -> None:
        self._spake = SPAKE2_A(pin.encode("utf-8"), idA=ID_WORKER, idB=ID_HUB)
        self.msg_a = self._spake.start().hex()
        self._key: bytes | None = None
        self._transcript: tuple[str, ...] = ()

    def finish(self, pair_id: str, msg_b: str, worker_key: str, name: str) -> str:
        """Consume the hub's message; return the worker's proof (covers ``worker_key``)."""
        try:
            self._key = self._spake.finish(_unhex(msg_b, "msg_b"))
        except Exception as exc:  # spake2 raises assorted errors on bad points: all are the peer's
            raise RemoteProtocolError(RejectCode.MALFORMED, f"bad SPAKE2 message: {exc}") from None
        self._transcript = (self.msg_a, msg_b, pair_id)
        return _proof(self._key, b"worker", *self._transcript, worker_key, name)

    def verify_hub(self, hub_key: str, session_id: str, proof_h: str) -> None:
        """Check the hub's proof; raises RemoteProtocolError(BAD_PIN) if it fails."""
        if self._key is None:
            raise RemoteProtocolError(RejectCode.MALFORMED, "pairing not started")
        expected = _proof(self._key, b"hub", *self._transcript, hub_key, session_id)
        if not _equal(expected, proof_h):
            raise RemoteProtocolError(RejectCode.BAD_PIN,
                                      "the hub could not prove it knows the PIN")


class HubPairing:
    """The hub's side of one pairing run (one per PAIR_START)."""

    def __init__(self, pin: str, msg_a: str, pair_id: str) -> None:
        if len(msg_a) != MSG_HEX_CHARS:
            raise RemoteProtocolError(RejectCode.MALFORMED, "msg_a has the wrong size")
        spake = SPAKE2_B(pin.encode("utf-8"), idA=ID_WORKER, idB=ID_HUB)
        self.msg_b = spake.start().hex()
        try:
            self._key = spake.finish(_unhex(msg_a, "msg_a"))
        except Exception as exc:  # spake2 raises assorted errors on bad points: all are the peer's
            raise RemoteProtocolError(RejectCode.MALFORMED, f"bad SPAKE2 message: {exc}") from None
        self._transcript = (msg_a, self.msg_b, pair_id)

    def verify_worker(self, worker_key: str, name: str, proof_w: str) -> bool:
        """True when the worker's proof verifies (it knows the PIN)."""
        return _equal(_proof(self._key, b"worker", *self._transcript, worker_key, name), proof_w)

    def hub_proof(self, hub_key: str, session_id: str) -> str:
        """The hub's proof, covering its public key and the session."""
        return _proof(self._key, b"hub", *self._transcript, hub_key, session_id)


def key_fingerprint(public_key: str) -> str:
    """A short, stable fingerprint of a public key (for adverts and for people)."""
    return hashlib.sha256(public_key.encode("ascii", "replace")).hexdigest()[:16]
