"""PIN proof by challenge-response. Pure: no clock, no sockets.

The PIN never crosses the wire. Both sides derive a key from it with scrypt (salted per
session, ~30 ms, so an eavesdropper who records one exchange pays that for every PIN they
test offline) and prove knowledge of the key with HMAC-SHA256 over both nonces. The worker
proves first; the hub's proof in WELCOME lets the worker know it reached the real hub.
This is a stopgap: the pairing issue replaces it with a PAKE, which resists offline guessing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

NONCE_BYTES = 16
SALT_BYTES = 16
_SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32, "maxmem": 64 * 1024 * 1024}


def new_nonce() -> str:
    """A fresh random nonce, hex encoded."""
    return secrets.token_hex(NONCE_BYTES)


def new_salt() -> str:
    """A fresh random key-derivation salt, hex encoded."""
    return secrets.token_hex(SALT_BYTES)


def new_token() -> str:
    """A fresh random membership token, hex encoded."""
    return secrets.token_hex(16)


def derive_key(pin: str, salt_hex: str) -> bytes:
    """The session key both sides derive from the PIN."""
    return hashlib.scrypt(pin.encode("utf-8"), salt=bytes.fromhex(salt_hex), **_SCRYPT)


def _proof(key: bytes, role: bytes, *parts: str) -> str:
    msg = role + b"\0" + b"\0".join(p.encode("utf-8") for p in parts)
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


def worker_proof(key: bytes, session_id: str, hub_nonce: str, client_nonce: str,
                 name: str) -> str:
    """The worker's proof that it knows the PIN."""
    return _proof(key, b"computeshare-worker", session_id, hub_nonce, client_nonce, name)


def hub_proof(key: bytes, session_id: str, hub_nonce: str, client_nonce: str,
              token: str) -> str:
    """The hub's proof that it knows the PIN, bound to the token it hands out."""
    return _proof(key, b"computeshare-hub", session_id, hub_nonce, client_nonce, token)


def proofs_equal(a: str, b: str) -> bool:
    """Constant-time comparison of two hex proofs."""
    # "replace" would map every non-ASCII character to "?"; surrogatepass never raises.
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"),
                               b.encode("utf-8", "surrogatepass"))


class Lockout:
    """Exponential back-off after repeated wrong PINs (pure: the caller passes `now`).

    ``free_attempts`` tries come without waiting: the wrong PIN that uses up the last of them
    locks pairing for ``base_s`` seconds, and each further one doubles the lock, capped at
    ``max_s``. A success resets the count.
    """

    def __init__(self, free_attempts: int = 5, base_s: float = 1.0, max_s: float = 300.0):
        self.free_attempts = free_attempts
        self.base_s = base_s
        self.max_s = max_s
        self.failures = 0
        self.locked_until = 0.0

    def retry_after(self, now: float) -> float:
        """Seconds until pairing is allowed again (0 when it is allowed now)."""
        return max(0.0, self.locked_until - now)

    def failed(self, now: float) -> None:
        """Record one wrong PIN."""
        self.failures += 1
        extra = self.failures - self.free_attempts
        if extra >= 0:
            # min(): 2**extra as a float overflows after ~1000 failures (days at max_s each).
            self.locked_until = now + min(self.max_s, self.base_s * 2 ** min(extra, 64))

    def succeeded(self) -> None:
        """Record a right PIN."""
        self.failures = 0
        self.locked_until = 0.0
