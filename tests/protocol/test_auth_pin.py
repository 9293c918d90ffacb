"""Random identifiers, PINs and the lock-out: fresh values, exact back-off, no reset on success."""

from __future__ import annotations

import pytest

from computeshare_desktop.protocol import auth


def test_random_values_are_fresh_hex() -> None:
    for make, nbytes in ((auth.new_nonce, auth.NONCE_BYTES), (auth.new_token, 16)):
        values = {make() for _ in range(50)}
        assert len(values) == 50
        assert all(len(bytes.fromhex(v)) == nbytes for v in values)


def test_pins_are_zero_padded_digits(monkeypatch: pytest.MonkeyPatch) -> None:
    pins = {auth.new_pin() for _ in range(200)}
    assert all(len(p) == 6 and p.isdigit() for p in pins)
    assert len(pins) > 190  # 10**6 values: 200 draws almost never collide
    assert all(len(auth.new_pin(4)) == 4 for _ in range(20))
    monkeypatch.setattr(auth.secrets, "randbelow", lambda n: 42)
    assert auth.new_pin() == "000042" and auth.new_pin(8) == "00000042"


def test_lockout_free_attempts_then_doubling() -> None:
    lock = auth.Lockout(free_attempts=5, base_s=1.0, max_s=300.0)
    now = 1000.0
    for _ in range(4):
        lock.failed(now)
        assert lock.retry_after(now) == 0.0  # tries 2..5 come without waiting
    waits = []
    for _ in range(6):
        lock.failed(now)
        waits.append(lock.retry_after(now))
        now += waits[-1]
        assert lock.retry_after(now) == 0.0
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    assert lock.failures == 10


def test_lockout_counts_down() -> None:
    lock = auth.Lockout(free_attempts=1, base_s=4.0)
    lock.failed(10.0)
    assert [lock.retry_after(t) for t in (10.0, 11.0, 13.5, 14.0, 20.0)] == [4.0, 3.0, 0.5, 0, 0]


def test_lockout_caps_and_never_overflows() -> None:
    lock = auth.Lockout(free_attempts=5, base_s=1.0, max_s=300.0)
    for _ in range(13):
        lock.failed(0.0)
    assert lock.retry_after(0.0) == 256.0
    lock.failed(0.0)
    assert lock.retry_after(0.0) == 300.0
    lock.failures = 5000  # days of attempts at max_s each: 2**k no longer fits in a float
    lock.failed(10.0)
    assert lock.retry_after(10.0) == 300.0
    assert lock.retry_after(400.0) == 0.0


def test_lockout_has_no_reset_on_success() -> None:
    # a right PIN must not wipe the count, or an attacker could interleave with a real pairing
    lock = auth.Lockout()
    assert not hasattr(lock, "succeeded") and not hasattr(lock, "reset")


def test_failures_are_forgotten_only_after_a_quiet_hour() -> None:
    lock = auth.Lockout(free_attempts=2, base_s=3.0, max_s=10.0, forget_after_s=3600.0)
    lock.failed(0.0)
    lock.failed(0.0)
    assert lock.retry_after(1.0) == pytest.approx(2.0)
    lock.failed(3600.0)  # exactly forget_after_s later: still remembered, and locked longer
    assert lock.failures == 3 and lock.retry_after(3600.0) == 6.0
    lock.failed(7200.5)  # more than forget_after_s after the last failure: a clean slate
    assert lock.failures == 1 and lock.retry_after(7200.5) == 0.0


def test_a_slow_attacker_keeps_the_count() -> None:
    """One guess every 59 minutes never lets the count lapse: the lock stays at its cap."""
    lock = auth.Lockout()
    now = 0.0
    for _ in range(50):
        now += max(lock.retry_after(now), 59 * 60.0)
        lock.failed(now)
    assert lock.failures == 50 and lock.retry_after(now) == lock.max_s
