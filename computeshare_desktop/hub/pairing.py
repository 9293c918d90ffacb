"""The hub's side of the PIN challenge-response. Pure: the caller passes ``now``."""

from __future__ import annotations

import logging
from collections import OrderedDict

from ..errors import RemoteProtocolError
from ..protocol import RejectCode, auth
from ..protocol.messages import Auth, Challenge, Hello

log = logging.getLogger(__name__)

CHALLENGE_TTL_S = 30.0
MAX_OPEN_CHALLENGES = 1024


class Pairing:
    """Issues one-time challenges and verifies PIN proofs, with a lock-out."""

    def __init__(self, pin: str, session_id: str, salt: str) -> None:
        self.session_id = session_id
        self.salt = salt
        self._key = auth.derive_key(pin, salt)
        self._open: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self.lockout = auth.Lockout()

    def challenge(self, hello: Hello, now: float) -> Challenge:
        """Answer HELLO with a fresh nonce, remembered until used or expired."""
        self._expire(now)
        while len(self._open) >= MAX_OPEN_CHALLENGES:
            self._open.popitem(last=False)
        nonce = auth.new_nonce()
        self._open[nonce] = (hello.client_nonce, now + CHALLENGE_TTL_S)
        return Challenge(session_id=self.session_id, hub_nonce=nonce, salt=self.salt)

    def verify(self, msg: Auth, now: float) -> None:
        """Check a PIN proof; each challenge is good for one try.

        Raises:
            RemoteProtocolError: LOCKED_OUT, UNKNOWN_CHALLENGE or BAD_PIN.
        """
        wait = self.lockout.retry_after(now)
        if wait > 0:
            raise RemoteProtocolError(RejectCode.LOCKED_OUT, f"retry in {wait:.0f} s")
        self._expire(now)
        entry = self._open.pop(msg.hub_nonce, None)
        if entry is None or entry[0] != msg.client_nonce:
            raise RemoteProtocolError(RejectCode.UNKNOWN_CHALLENGE, "challenge unknown or used")
        expected = auth.worker_proof(self._key, self.session_id, msg.hub_nonce,
                                     msg.client_nonce, msg.name)
        if not auth.proofs_equal(expected, msg.proof):
            self.lockout.failed(now)
            log.warning("wrong PIN from %r (%d failures in a row)", msg.name,
                        self.lockout.failures)
            raise RemoteProtocolError(RejectCode.BAD_PIN, "wrong PIN")
        self.lockout.succeeded()

    def hub_proof(self, msg: Auth, token: str) -> str:
        """The hub's proof for WELCOME."""
        return auth.hub_proof(self._key, self.session_id, msg.hub_nonce, msg.client_nonce, token)

    def _expire(self, now: float) -> None:
        while self._open:
            nonce, (_, expires) = next(iter(self._open.items()))
            if expires > now:
                break
            del self._open[nonce]
