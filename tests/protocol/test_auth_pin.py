"""PIN proofs and the lock-out: deterministic keys, separated roles, exact back-off."""

from __future__ import annotations

import functools

import pytest

from computeshare_desktop.protocol import auth

SALT_A = "00" * auth.SALT_BYTES
SALT_B = "01" * auth.SALT_BYTES


@functools.lru_cache(maxsize=None)
def key(pin: str, salt: str) -> bytes:
    return auth.derive_key(pin, salt)


def test_derive_key_is_deterministic_per_pin_and_salt() -> None:
    k = key("123456", SALT_A)
    assert len(k) == 32
    assert auth.derive_key("123456", SALT_A) == k
    assert len({k, key("123457", SALT_A), key("123456", SALT_B), key("", SALT_A)}) == 4


def test_random_values_are_fresh_hex() -> None:
    for make, nbytes in ((auth.new_nonce, auth.NONCE_BYTES), (auth.new_salt, auth.SALT_BYTES),
                         (auth.new_token, 16)):
        values = {make() for _ in range(50)}
        assert len(values) == 50
        assert all(len(bytes.fromhex(v)) == nbytes for v in values)


def test_proofs_bind_every_input_and_separate_roles() -> None:
    k = key("123456", SALT_A)
    args = ("s1", "hn", "cn", "laptop")
    proof = auth.worker_proof(k, *args)
    assert proof == auth.worker_proof(k, *args) and len(bytes.fromhex(proof)) == 32
    assert auth.hub_proof(k, *args) != proof  # a worker's proof never passes as the hub's
    variants = {auth.worker_proof(key("654321", SALT_A), *args)}
    for i in range(4):
        changed = list(args)
        changed[i] += "x"
        variants.add(auth.worker_proof(k, *changed))
    variants.add(auth.worker_proof(k, "s1", "hn", "cn\0", "laptop"[1:]))  # no splicing at \0
    assert proof not in variants and len(variants) == 6


def test_proofs_equal() -> None:
    assert auth.proofs_equal("ab" * 32, "ab" * 32)
    assert not auth.proofs_equal("ab" * 32, "ab" * 31 + "ac")
    assert not auth.proofs_equal("ab" * 32, "")
    assert not auth.proofs_equal("é", "?")  # non-ASCII never compares equal to its stand-in
    assert auth.proofs_equal("é", "é")


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


def test_lockout_resets_on_success() -> None:
    lock = auth.Lockout(free_attempts=2, base_s=3.0, max_s=10.0)
    lock.failed(0.0)
    lock.failed(0.0)
    assert lock.retry_after(1.0) == pytest.approx(2.0)
    lock.succeeded()
    assert lock.failures == 0 and lock.retry_after(1.0) == 0.0
    lock.failed(5.0)
    assert lock.retry_after(5.0) == 0.0  # the free attempts are back
