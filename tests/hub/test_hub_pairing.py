"""Pairing through HubCore: PIN proofs both ways, one-time challenges, lock-out, brute force."""

from __future__ import annotations

import pytest
from helpers_hub import (PIN, SESSION_ID, T0, auth_message, challenge, decode_replies, full_round,
                         join, make_hub, only, reject_code, send, session_key, start_training)

from computeshare_desktop.hub import HubCore
from computeshare_desktop.hub.pairing import CHALLENGE_TTL_S
from computeshare_desktop.protocol import RejectCode, auth
from computeshare_desktop.protocol.messages import Auth, Bye, Challenge, Reject, Welcome

WRONG = "654321"


@pytest.fixture()
def hub() -> HubCore:
    return make_hub()


def test_right_pin_gets_a_welcome_whose_hub_proof_verifies(hub: HubCore) -> None:
    ch, nonce = challenge(hub, b"p1", T0)
    assert ch.session_id == SESSION_ID and ch.salt == hub.pairing.salt
    msg = auth_message(ch, nonce, name="laptop")
    welcome = only(send(hub, b"p1", msg, T0), b"p1")
    assert isinstance(welcome, Welcome)
    key = session_key(PIN, ch.salt)
    expected = auth.hub_proof(key, SESSION_ID, ch.hub_nonce, nonce, welcome.token)
    assert auth.proofs_equal(welcome.proof, expected)
    assert welcome.proof != msg.proof  # the hub's proof is not an echo of ours
    # a hub that does not know the PIN could not have produced it
    assert welcome.proof != auth.hub_proof(session_key(WRONG, ch.salt), SESSION_ID,
                                           ch.hub_nonce, nonce, welcome.token)
    assert (welcome.worker_id, welcome.shard, welcome.num_shards) == (1, 0, 2)
    assert welcome.shard_size == 2000 and welcome.version == 0 and welcome.state == "waiting"
    assert welcome.fingerprint == hub.fingerprint and welcome.codec == hub.config.codec
    assert len(bytes.fromhex(welcome.token)) == 16
    assert [e["kind"] for e in hub.drain_events()] == ["worker_joined"]


def test_wrong_pin_is_bad_pin_and_nothing_else(hub: HubCore) -> None:
    replies = send(hub, b"p1", auth_message(*challenge(hub, b"p1", T0), pin=WRONG), T0)
    assert len(replies) == 1
    assert reject_code(replies[0].msg) is RejectCode.BAD_PIN
    assert len(hub.members) == 0 and hub.pairing.lockout.failures == 1
    assert [e["kind"] for e in hub.drain_events()] == ["rejected"]


def test_proof_for_another_name_is_bad_pin(hub: HubCore) -> None:
    ch, nonce = challenge(hub, b"p1", T0)
    msg = auth_message(ch, nonce, name="alice")
    forged = Auth(msg.hub_nonce, msg.client_nonce, msg.proof, "mallory", msg.device)
    assert reject_code(only(send(hub, b"p1", forged, T0))) is RejectCode.BAD_PIN


@pytest.mark.parametrize("pin", [PIN, WRONG])
def test_a_challenge_is_good_for_one_try(hub: HubCore, pin: str) -> None:
    msg = auth_message(*challenge(hub, b"p1", T0), pin=pin)
    first = only(send(hub, b"p1", msg, T0))
    assert isinstance(first, Welcome) == (pin == PIN)
    replay = only(send(hub, b"p2", msg, T0 + 1))
    assert reject_code(replay) is RejectCode.UNKNOWN_CHALLENGE
    assert len(hub.members) == (1 if pin == PIN else 0)


def test_unknown_expired_or_mismatched_challenge(hub: HubCore) -> None:
    ch, nonce = challenge(hub, b"p1", T0)
    other = Challenge(ch.session_id, auth.new_nonce(), ch.salt)  # never issued
    assert reject_code(only(send(hub, b"p1", auth_message(other, nonce), T0))) \
        is RejectCode.UNKNOWN_CHALLENGE
    # the client nonce must be the one the challenge was issued for
    msg = auth_message(ch, auth.new_nonce())
    assert reject_code(only(send(hub, b"p1", msg, T0))) is RejectCode.UNKNOWN_CHALLENGE
    ch, nonce = challenge(hub, b"p1", T0)
    late = auth_message(ch, nonce)
    assert reject_code(only(send(hub, b"p1", late, T0 + CHALLENGE_TTL_S))) \
        is RejectCode.UNKNOWN_CHALLENGE
    assert hub.pairing.lockout.failures == 0  # none of these was a PIN guess


def test_lock_out_after_five_wrong_pins(hub: HubCore) -> None:
    now = T0
    for attempt in range(5):
        reply = only(send(hub, b"x", auth_message(*challenge(hub, b"x", now), pin=WRONG), now))
        assert reject_code(reply) is RejectCode.BAD_PIN, attempt
    ch, nonce = challenge(hub, b"p1", now + 0.5)  # HELLO still works while locked
    right = auth_message(ch, nonce)
    locked = only(send(hub, b"p1", right, now + 0.5))
    assert reject_code(locked) is RejectCode.LOCKED_OUT
    assert locked.retry_after == pytest.approx(0.5)
    assert len(hub.members) == 0
    # the lock did not burn the challenge: the same AUTH works once the lock has passed
    welcome = only(send(hub, b"p1", right, now + 1.0))
    assert isinstance(welcome, Welcome)
    assert hub.pairing.lockout.failures == 0  # a success resets the count


def test_lock_doubles_and_rejected_tries_do_not_count(hub: HubCore) -> None:
    now = T0
    for _ in range(6):
        now += hub.pairing.lockout.retry_after(now)
        send(hub, b"x", auth_message(*challenge(hub, b"x", now), pin=WRONG), now)
    assert hub.pairing.lockout.retry_after(now) == 2.0
    for dt in (0.0, 0.5, 1.9):  # tries during the lock are refused unread
        msg = auth_message(*challenge(hub, b"x", now + dt), pin=WRONG)
        reply = only(send(hub, b"x", msg, now + dt))
        assert reject_code(reply) is RejectCode.LOCKED_OUT
        assert reply.retry_after == pytest.approx(2.0 - dt)
    assert hub.pairing.lockout.failures == 6


def test_brute_force_needs_hours_for_a_hundred_guesses(hub: HubCore) -> None:
    """An attacker guessing as fast as the hub allows: 100 checked guesses take > 1 hour."""
    wrong_key = session_key(WRONG)
    now, checked, refused = T0, 0, 0
    while checked < 100:
        ch, nonce = challenge(hub, b"evil", now)
        proof = auth.worker_proof(wrong_key, ch.session_id, ch.hub_nonce, nonce, "evil")
        reply = only(send(hub, b"evil", Auth(ch.hub_nonce, nonce, proof, "evil", "cpu"), now))
        assert isinstance(reply, Reject)
        if reply.code == RejectCode.LOCKED_OUT.value:
            refused += 1
            now += reply.retry_after  # wait exactly as long as told
        else:
            assert reply.code == RejectCode.BAD_PIN.value
            checked += 1
    elapsed = now - T0
    assert elapsed > 3600
    assert elapsed == pytest.approx(511 + 300 * 86)  # 1 + 2 + ... + 256, then 300 s each
    assert refused == 95  # every lock was respected: one refusal each, then a checked guess


def test_third_worker_gets_session_full() -> None:
    hub = make_hub(workers=2)
    assert isinstance(join(hub, b"w1", T0), Welcome)
    assert isinstance(join(hub, b"w2", T0), Welcome)
    reply = join(hub, b"w3", T0)
    assert reject_code(reply) is RejectCode.SESSION_FULL
    assert len(hub.members) == 2 and "2" in reply.detail


def test_auth_after_the_session_is_done_is_session_done() -> None:
    hub = make_hub(rounds=1)
    workers = start_training(hub)
    full_round(hub, workers, T0 + 0.1)
    assert hub.done
    only(send(hub, workers[0].peer, Bye(workers[0].token), T0 + 0.2))  # a shard is free now
    assert len(hub.members) == 1
    assert reject_code(join(hub, b"late", T0 + 0.3)) is RejectCode.SESSION_DONE
    assert len(hub.members) == 1


def test_lone_surrogate_name_is_malformed_not_a_crash(hub: HubCore) -> None:
    ch, nonce = challenge(hub, b"p1", T0)
    header = ('CS\x01{"t":"auth","hub_nonce":"%s","client_nonce":"%s","proof":"00",'
              '"name":"\\ud800","device":"cpu"}' % (ch.hub_nonce, nonce)).encode()
    assert reject_code(only(decode_replies(hub.handle(b"p1", [header], T0)))) \
        is RejectCode.MALFORMED
    assert len(hub.members) == 0
