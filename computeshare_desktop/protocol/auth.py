"""Random identifiers and the pairing lock-out. Pure: the caller passes ``now``."""

from __future__ import annotations

import secrets

from ..errors import ConfigError

NONCE_BYTES = 16
PIN_DIGITS = 6  # a random PIN's
PIN_MIN_LENGTH = 4  # a PIN the user chose: anything shorter is too easy to guess


def new_nonce() -> str:
    """A fresh random identifier, hex encoded."""
    return secrets.token_hex(NONCE_BYTES)


def new_token() -> str:
    """A fresh random membership token, hex encoded."""
    return secrets.token_hex(16)


def new_pin(digits: int = PIN_DIGITS) -> str:
    """A random numeric PIN."""
    return f"{secrets.randbelow(10**digits):0{digits}d}"


def typed_pin(text: str) -> str:
    """A PIN as people type or paste it ("428 913"): without its spaces."""
    return "".join(text.split())


def check_pin(pin: str) -> str:
    """The session PIN ``pin`` (as typed); ConfigError when it is too short to be one."""
    pin = typed_pin(pin)
    if len(pin) < PIN_MIN_LENGTH:
        raise ConfigError(f"the PIN must have at least {PIN_MIN_LENGTH} characters")
    return pin


class Lockout:
    """Exponential back-off after repeated wrong PINs.

    ``free_attempts`` tries come without waiting: the wrong PIN that uses up the last of them
    locks pairing for ``base_s`` seconds, and each further one doubles the lock, capped at
    ``max_s``. A right PIN does not wipe the count (an attacker could otherwise interleave
    with a legitimate pairing to earn fresh tries); the count is forgotten only after
    ``forget_after_s`` without any wrong PIN.
    """

    def __init__(self, free_attempts: int = 5, base_s: float = 1.0, max_s: float = 300.0,
                 forget_after_s: float = 3600.0) -> None:
        self.free_attempts = free_attempts
        self.base_s = base_s
        self.max_s = max_s
        self.forget_after_s = forget_after_s
        self.failures = 0
        self.locked_until = 0.0
        self._last_failure = float("-inf")

    def retry_after(self, now: float) -> float:
        """Seconds until pairing is allowed again (0 when it is allowed now)."""
        return max(0.0, self.locked_until - now)

    def failed(self, now: float) -> None:
        """Record one wrong PIN."""
        if now - self._last_failure > self.forget_after_s:
            self.failures = 0
        self._last_failure = now
        self.failures += 1
        extra = self.failures - self.free_attempts
        if extra >= 0:
            # min(): 2**extra as a float overflows after ~1000 failures (days at max_s each).
            self.locked_until = now + min(self.max_s, self.base_s * 2 ** min(extra, 64))
