"""Pairing through HubCore's pairing socket: SPAKE2 both ways, keys onto the allowlist, replays
and men in the middle, abandoned runs, rate limits, the lock-out and the brute-force bound."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from helpers.hub import (HUB_KEY, PIN, SESSION_ID, T0, TORCH, WRONG, admit, decode_replies,
                          fake_key,
                         finish_message, full_round, join, make_hub, only, pair, pair_start,
                         pairing_send, reject_code, send, start_training)
from helpers.protocol import HEAD

from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.events import PairingRefused
from computeshare_desktop.hub import HubCore
from computeshare_desktop.hub.pairing import (BURST, MAX_OPEN, PAIRING_TTL_S,
                                              PER_SOURCE_OPEN, SOURCE_BURST,
                                              SOURCE_STARTS_PER_S, STARTS_PER_S)
from computeshare_desktop.protocol import RejectCode, encode
from computeshare_desktop.protocol.messages import (Bye, Join, Paired, PairFinish, PairReply,
                                                    PairStart, Reject, Welcome)
from computeshare_desktop.protocol.pake import MSG_HEX_CHARS, HubPairing, WorkerPairing

KEY_A, KEY_B = fake_key(b"alice"), fake_key(b"mallory")


@pytest.fixture()
def hub() -> HubCore:
    return make_hub()


def refused(hub: HubCore) -> list[tuple[str, int, float]]:
    """The pairing_refused events since the last drain, as (code, failures, retry_after)."""
    return [(e.code, e.failures, e.retry_after) for e in hub.drain_events()
            if isinstance(e, PairingRefused)]


def started(hub: HubCore, peer: bytes, now: float, pin: str = PIN) -> tuple[Any, PairReply]:
    run, reply = pair_start(hub, peer, now, pin=pin)
    assert isinstance(reply, PairReply), reply
    return run, reply


# ----------------------------------------------------------------- the handshake
def test_right_pin_pairs_and_the_hub_proves_it_back(hub: HubCore) -> None:
    run, reply = started(hub, b"p1", T0)
    assert len(bytes.fromhex(reply.pair_id)) == 16 and len(reply.msg_b) == MSG_HEX_CHARS
    paired = pairing_send(hub, b"p1", finish_message(run, reply, KEY_A, "p1"), T0)
    assert isinstance(paired, Paired)
    assert (paired.hub_key, paired.session_id) == (HUB_KEY, SESSION_ID)
    run.verify_hub(paired.hub_key, paired.session_id, paired.proof)  # the hub knows the PIN
    with pytest.raises(RemoteProtocolError) as info:  # and its proof pins its key
        run.verify_hub(KEY_B, paired.session_id, paired.proof)
    assert info.value.code is RejectCode.BAD_PIN
    assert KEY_A in hub.allowlist and hub.allowlist.name(KEY_A) == "p1" and len(hub.allowlist) == 1
    assert hub.pairing.lockout.failures == 0 and hub.drain_events() == []


def test_a_paired_key_can_join(hub: HubCore) -> None:
    assert isinstance(pair(hub, b"p1", T0, name="laptop"), Paired)
    welcome = only(send(hub, b"p1", Join("laptop", "cpu", TORCH), T0))
    assert isinstance(welcome, Welcome)
    assert (welcome.worker_id, welcome.shard, welcome.num_shards) == (1, 0, 2)
    assert welcome.shard_size == 2000 and welcome.version == 0 and welcome.state == "waiting"
    assert welcome.session_id == SESSION_ID and welcome.fingerprint == hub.fingerprint
    assert welcome.codec == hub.config.codec and len(bytes.fromhex(welcome.token)) == 16
    (member,) = hub.members.members()
    assert (member.key, member.name, member.device) == (fake_key(b"p1"), "laptop", "cpu")
    assert [e.kind for e in hub.drain_events()] == ["worker_joined"]


def test_wrong_pin_is_bad_pin_and_the_key_stays_out(hub: HubCore) -> None:
    reply = pair(hub, b"p1", T0, pin=WRONG)
    assert reject_code(reply) is RejectCode.BAD_PIN and reply.retry_after == 0.0
    assert len(hub.allowlist) == 0 and hub.pairing.lockout.failures == 1
    assert refused(hub) == [("BAD_PIN", 1, 0.0)]
    refusal = only(send(hub, b"p1", Join("p1", "cpu", TORCH), T0))
    assert reject_code(refusal) is RejectCode.NOT_PAIRED
    assert len(hub.members) == 0


def test_a_hub_that_does_not_know_the_pin_cannot_fake_paired() -> None:
    """A man in the middle posing as the hub answers with SPAKE2 on its own guess of the PIN:
    the worker refuses its PAIRED, so it never pins the impostor's key."""
    run = WorkerPairing(PIN)
    impostor = HubPairing(WRONG, run.msg_a, "ee" * 16)
    proof = run.finish("ee" * 16, impostor.msg_b, KEY_A, "p1")
    assert not impostor.verify_worker(KEY_A, "p1", proof)  # nor did it learn to pass as us
    with pytest.raises(RemoteProtocolError) as info:
        run.verify_hub(KEY_B, SESSION_ID, impostor.hub_proof(KEY_B, SESSION_ID))
    assert info.value.code is RejectCode.BAD_PIN


# ----------------------------------------------------------------- replays and men in the middle
@pytest.mark.parametrize("pin", [PIN, WRONG])
def test_a_replayed_pair_finish_is_unknown_challenge(hub: HubCore, pin: str) -> None:
    run, reply = started(hub, b"p1", T0, pin)
    frames = encode(finish_message(run, reply, KEY_A, "p1"))
    first = only(decode_replies(hub.handle_pairing(b"p1", frames, T0)))
    assert isinstance(first, Paired) == (pin == PIN)
    for peer, dt in ((b"p1", 0.0), (b"eve", 1.0)):
        replay = only(decode_replies(hub.handle_pairing(peer, frames, T0 + dt)))
        assert reject_code(replay) is RejectCode.UNKNOWN_CHALLENGE
    assert hub.pairing.lockout.failures == (0 if pin == PIN else 1)  # replays are no guesses
    assert len(hub.allowlist) == (1 if pin == PIN else 0)


def test_a_replayed_pair_start_gets_a_new_run_the_old_finish_cannot_use(hub: HubCore) -> None:
    run, reply = started(hub, b"p1", T0)
    start_frames = encode(PairStart(run.msg_a, "p1"))
    finish = finish_message(run, reply, KEY_A, "p1")
    assert isinstance(pairing_send(hub, b"p1", finish, T0), Paired)
    replayed = only(decode_replies(hub.handle_pairing(b"eve", start_frames, T0 + 1)))
    assert isinstance(replayed, PairReply)
    assert replayed.pair_id != reply.pair_id and replayed.msg_b != reply.msg_b
    again = pairing_send(hub, b"eve", msgspec.structs.replace(finish, worker_key=KEY_B), T0 + 1)
    assert reject_code(again) is RejectCode.UNKNOWN_CHALLENGE  # the old pair_id is used up
    retargeted = PairFinish(replayed.pair_id, KEY_B, finish.proof)
    assert reject_code(pairing_send(hub, b"eve", retargeted, T0 + 1)) is RejectCode.BAD_PIN
    assert KEY_B not in hub.allowlist and len(hub.allowlist) == 1


def test_a_worker_key_swapped_in_flight_is_bad_pin(hub: HubCore) -> None:
    run, reply = started(hub, b"p1", T0)
    honest = finish_message(run, reply, KEY_A, "p1")
    swapped = msgspec.structs.replace(honest, worker_key=KEY_B)
    assert reject_code(pairing_send(hub, b"p1", swapped, T0)) is RejectCode.BAD_PIN
    assert KEY_A not in hub.allowlist and KEY_B not in hub.allowlist
    # the run is spent: the honest message arriving late gets nothing either (the worker retries)
    assert reject_code(pairing_send(hub, b"p1", honest, T0)) is RejectCode.UNKNOWN_CHALLENGE
    assert len(hub.allowlist) == 0 and hub.pairing.lockout.failures == 1


def test_a_name_changed_in_flight_is_bad_pin(hub: HubCore) -> None:
    run = pair_start(hub, b"p1", T0)[0]
    renamed = pairing_send(hub, b"p1", PairStart(run.msg_a, "mallory"), T0)
    proof = run.finish(renamed.pair_id, renamed.msg_b, KEY_A, "alice")  # the worker said alice
    reply = pairing_send(hub, b"p1", PairFinish(renamed.pair_id, KEY_A, proof), T0)
    assert reject_code(reply) is RejectCode.BAD_PIN and len(hub.allowlist) == 0


@pytest.mark.parametrize("key", ["", "x" * 39, "x" * 41, "x" * 39 + " ", "é" * 40,
                                 KEY_A[:-1] + "\\", KEY_A[:-1] + "\n"])
def test_a_worker_key_that_is_not_z85_is_malformed(hub: HubCore, key: str) -> None:
    run, reply = started(hub, b"p1", T0)
    answer = pairing_send(hub, b"p1", finish_message(run, reply, key, "p1"), T0)
    assert reject_code(answer) is RejectCode.MALFORMED
    assert len(hub.allowlist) == 0 and hub.pairing.lockout.failures == 0  # the PIN was right


def test_a_worker_key_with_a_trailing_newline_is_malformed(hub: HubCore) -> None:
    run, reply = started(hub, b"p1", T0)
    answer = pairing_send(hub, b"p1", finish_message(run, reply, KEY_A + "\n", "p1"), T0)
    assert reject_code(answer) is RejectCode.MALFORMED
    assert len(hub.allowlist) == 0


# ----------------------------------------------------------------- abandoned runs, rate limits
def test_an_abandoned_run_expires_after_5_s_and_is_no_wrong_pin(hub: HubCore) -> None:
    assert PAIRING_TTL_S == 5.0
    run1, reply1 = started(hub, b"p1", T0)
    run2, reply2 = started(hub, b"p2", T0)
    late = T0 + PAIRING_TTL_S - 0.01
    assert isinstance(pairing_send(hub, b"p1", finish_message(run1, reply1, KEY_A, "p1"), late),
                      Paired)
    expired = pairing_send(hub, b"p2", finish_message(run2, reply2, KEY_B, "p2"),
                           T0 + PAIRING_TTL_S)
    assert reject_code(expired) is RejectCode.UNKNOWN_CHALLENGE
    assert KEY_B not in hub.allowlist and hub.pairing.lockout.failures == 0
    assert refused(hub) == []


def test_one_source_holds_two_runs_and_a_new_one_replaces_its_oldest(hub: HubCore) -> None:
    assert PER_SOURCE_OPEN == 2
    runs = [started(hub, b"x", T0 + 0.1 * i) for i in range(3)]
    oldest = pairing_send(hub, b"x", finish_message(*runs[0], KEY_A, "x"), T0 + 0.5)
    assert reject_code(oldest) is RejectCode.UNKNOWN_CHALLENGE
    assert isinstance(pairing_send(hub, b"x", finish_message(*runs[2], KEY_A, "x"), T0 + 0.5),
                      Paired)


def test_one_source_is_rate_limited_without_slowing_the_others(hub: HubCore) -> None:
    assert (SOURCE_BURST, SOURCE_STARTS_PER_S) == (4.0, 1.0)
    replies = [pair_start(hub, b"x", T0)[1] for _ in range(6)]
    assert [type(r).__name__ for r in replies] == ["PairReply"] * 4 + ["Reject"] * 2
    busy = replies[4]
    assert reject_code(busy) is RejectCode.BUSY and busy.retry_after == pytest.approx(1.0)
    assert isinstance(pair(hub, b"p1", T0), Paired)  # another machine pairs meanwhile
    assert isinstance(pair_start(hub, b"x", T0 + 1.0)[1], PairReply)  # one a second
    assert reject_code(pair_start(hub, b"x", T0 + 1.0)[1]) is RejectCode.BUSY
    assert hub.pairing.lockout.failures == 0


def test_a_flood_from_many_sources_never_keeps_a_worker_out(hub: HubCore) -> None:
    """Abandoned runs from 40 addresses fill every slot; each new start evicts the oldest,
    so a real worker's run lives long enough to finish."""
    assert MAX_OPEN == 16
    now = T0
    for i in range(40):  # one start per attacker address, under every rate limit
        now += 1 / STARTS_PER_S
        started(hub, b"attacker-%d" % i, now)
    assert len(hub.pairing._open) == MAX_OPEN and hub.pairing.evicted == 40 - MAX_OPEN
    now += 1 / STARTS_PER_S
    assert isinstance(pair(hub, b"worker", now), Paired)


def test_the_shared_rate_bounds_the_cpu_but_not_this_machines_worker(hub: HubCore) -> None:
    assert BURST == 16.0
    for _ in range(3):  # 8 addresses start 3 runs: the later two spend the shared burst
        for i in range(8):
            started(hub, b"a%d" % i, T0)
    busy = pair_start(hub, b"a0", T0)[1]  # its own allowance has one more; the shared none
    assert reject_code(busy) is RejectCode.BUSY and "too many" in busy.detail
    assert isinstance(pair_start(hub, b"newcomer", T0)[1], PairReply)  # quiet until now
    for i in range(20):  # more floods: none of them evicts the local run
        started(hub, b"b%d" % i, T0 + 1.25 + 0.0625 * i)
    local_run = pair_start(hub, b"local", T0 + 2.6)  # (started after the burst was spent)
    run, reply = local_run[0], pairing_send(hub, b"local", PairStart(local_run[0].msg_a,
                                                                      "local"), T0 + 2.6,
                                               source="127.0.0.1")
    assert isinstance(reply, PairReply)
    for i in range(20):
        started(hub, b"c%d" % i, T0 + 2.7 + 0.0625 * i)
    done = pairing_send(hub, b"local", finish_message(run, reply, KEY_A, "local"), T0 + 4.0,
                        source="127.0.0.1")
    assert isinstance(done, Paired)


def test_this_machines_worker_pairs_during_a_lock_out(hub: HubCore) -> None:
    for i in range(6):
        pair(hub, b"x%d" % i, T0, pin=WRONG)
    assert hub.pairing.lockout.retry_after(T0) > 0
    run, reply = pair_start(hub, b"lan", T0)
    assert reject_code(reply) is RejectCode.LOCKED_OUT
    run = WorkerPairing(PIN)
    reply = pairing_send(hub, b"me", PairStart(run.msg_a, "me"), T0, source="127.0.0.1")
    done = pairing_send(hub, b"me", finish_message(run, reply, KEY_A, "me"), T0,
                        source="127.0.0.1")
    assert isinstance(done, Paired)
    wrong = WorkerPairing(WRONG)
    reply = pairing_send(hub, b"me", PairStart(wrong.msg_a, "me"), T0, source="::1")
    assert reject_code(pairing_send(hub, b"me", finish_message(wrong, reply, KEY_B, "me"), T0,
                                    source="::1")) is RejectCode.BAD_PIN
    assert hub.pairing.lockout.failures == 5  # a local wrong PIN does not lock the LAN out
    assert hub.pairing.local_lockout.failures == 1  # it counts on this machine's own


def test_guesses_from_this_machine_are_locked_out_too(hub: HubCore) -> None:
    """A local process gets the same exponential lock-out as the LAN, on its own count: it
    cannot guess faster than a remote peer, and cannot lock the LAN out."""
    for i in range(5):  # one start a second: the per-address rate
        guess = pair(hub, b"local", T0 + i, pin=WRONG, key=fake_key(b"g%d" % i), source="::1")
        assert reject_code(guess) is RejectCode.BAD_PIN
    # every loopback address shares the count
    locked = pair_start(hub, b"local", T0 + 4.5, source="127.0.0.1")[1]
    assert reject_code(locked) is RejectCode.LOCKED_OUT and locked.retry_after > 0
    assert hub.pairing.lockout.failures == 0  # the LAN is not locked by local guesses
    assert isinstance(pair(hub, b"lan", T0 + 4.5), Paired)


def test_a_kicked_key_cannot_pair_again_even_with_the_pin() -> None:
    hub = make_hub(workers=2)
    w1 = admit(hub, b"w1", T0)
    assert hub.kick(w1.welcome.worker_id)
    again = pair(hub, b"w1", T0 + 1, key=w1.key)
    assert reject_code(again) is RejectCode.BANNED
    assert w1.key not in hub.allowlist and hub.pairing.lockout.failures == 0
    assert isinstance(pair(hub, b"w2", T0 + 1), Paired)  # another key still pairs


def test_a_kicked_machine_cannot_pair_again_under_a_new_key() -> None:
    """Kick bans the address a key paired from: a new key and name from it are refused,
    other machines still pair, and this machine's own worker is never banned."""
    hub = make_hub(workers=3)
    w1 = admit(hub, b"w1", T0)
    assert hub.kick(w1.welcome.worker_id)
    other_name = pair(hub, b"w1", T0 + 1, name="renamed", key=fake_key(b"new"))
    assert reject_code(other_name) is RejectCode.BANNED
    assert isinstance(pair(hub, b"w2", T0 + 1), Paired)
    assert hub.pairing.lockout.failures == 0  # a ban is not a wrong guess
    assert isinstance(pair(hub, b"me", T0 + 2, key=KEY_A, source="127.0.0.1"), Paired)
    hub.allowlist.ban(KEY_A)  # what kick does to the key
    banned = pair(hub, b"me", T0 + 3, key=KEY_A, source="127.0.0.1")
    assert reject_code(banned) is RejectCode.BANNED
    # the host's machine still trains
    assert isinstance(pair(hub, b"me", T0 + 4, key=KEY_B, source="127.0.0.1"), Paired)


def test_a_new_pin_ends_the_old_one() -> None:
    hub = make_hub()
    old_run = started(hub, b"slow", T0)
    hub.pairing.set_pin("864209")
    assert reject_code(pair(hub, b"a", T0, key=KEY_A)) is RejectCode.BAD_PIN
    assert isinstance(pair(hub, b"b", T0, pin="864209", key=KEY_B), Paired)
    late = pairing_send(hub, b"slow", finish_message(*old_run, KEY_A, "slow"), T0)
    assert reject_code(late) is RejectCode.UNKNOWN_CHALLENGE  # begun with the old PIN


# ----------------------------------------------------------------- the lock-out
def test_five_wrong_pins_lock_and_a_right_pin_resets_nothing(hub: HubCore) -> None:
    for attempt in range(5):
        assert reject_code(pair(hub, b"x%d" % attempt, T0, pin=WRONG)) is RejectCode.BAD_PIN
    locked = pair(hub, b"p1", T0 + 0.5)  # the right PIN, while locked
    assert reject_code(locked) is RejectCode.LOCKED_OUT
    assert locked.retry_after == pytest.approx(0.5)
    assert len(hub.allowlist) == 0
    assert isinstance(pair(hub, b"p1", T0 + 1.0), Paired)  # once the lock has passed
    assert hub.pairing.lockout.failures == 5  # a right PIN does not wipe the count
    assert reject_code(pair(hub, b"x", T0 + 1.0, pin=WRONG)) is RejectCode.BAD_PIN
    assert hub.pairing.lockout.retry_after(T0 + 1.0) == 2.0  # locked again, and longer
    assert refused(hub) == [("BAD_PIN", n, 0.0) for n in range(1, 5)] + [
        ("BAD_PIN", 5, 1.0), ("LOCKED_OUT", 5, 0.5), ("BAD_PIN", 6, 2.0)]


def test_the_lock_doubles_and_refused_tries_do_not_count(hub: HubCore) -> None:
    now = T0
    for i in range(6):
        now += hub.pairing.lockout.retry_after(now)
        pair(hub, b"x%d" % i, now, pin=WRONG)
    assert hub.pairing.lockout.retry_after(now) == 2.0
    for dt in (0.0, 0.5, 1.9):  # tries during the lock are refused unread
        reply = pair(hub, b"x", now + dt, pin=WRONG)
        assert reject_code(reply) is RejectCode.LOCKED_OUT
        assert reply.retry_after == pytest.approx(2.0 - dt)
    assert hub.pairing.lockout.failures == 6


def test_runs_opened_before_the_lock_buy_no_extra_guesses(hub: HubCore) -> None:
    good = started(hub, b"p1", T0)
    wrong = [started(hub, b"x%d" % i, T0, WRONG) for i in range(7)]
    answers = [pairing_send(hub, b"x%d" % i, finish_message(run, reply, KEY_B, "x%d" % i), T0)
               for i, (run, reply) in enumerate(wrong)]
    assert [a.code for a in answers] == ["BAD_PIN"] * 5 + ["LOCKED_OUT"] * 2
    assert hub.pairing.lockout.failures == 5
    honest = finish_message(*good, KEY_A, "p1")
    assert reject_code(pairing_send(hub, b"p1", honest, T0 + 0.5)) is RejectCode.LOCKED_OUT
    # the lock refused the run unread: the same message works once the lock has passed
    assert isinstance(pairing_send(hub, b"p1", honest, T0 + 1.0), Paired)
    assert KEY_A in hub.allowlist and len(hub.allowlist) == 1


def test_failures_are_forgotten_after_an_hour_without_one(hub: HubCore) -> None:
    for _ in range(5):
        pair(hub, b"x", T0, pin=WRONG)
    later = T0 + hub.pairing.lockout.forget_after_s + 1
    assert reject_code(pair(hub, b"x", later, pin=WRONG)) is RejectCode.BAD_PIN
    assert hub.pairing.lockout.failures == 1 and hub.pairing.lockout.retry_after(later) == 0.0


def test_brute_force_needs_hours_for_a_hundred_guesses(hub: HubCore) -> None:
    """An attacker guessing as fast as the hub allows: 100 checked guesses take > 1 hour."""
    now, checked, locked, busy = T0, 0, 0, 0
    while checked < 100:
        reply = pair(hub, b"evil", now, pin=WRONG, key=KEY_B)
        assert isinstance(reply, Reject)
        if reply.code == RejectCode.BAD_PIN.value:
            checked += 1
            continue
        assert reply.code in (RejectCode.LOCKED_OUT.value, RejectCode.BUSY.value), reply
        assert reply.retry_after > 0
        locked += reply.code == RejectCode.LOCKED_OUT.value
        busy += reply.code == RejectCode.BUSY.value
        now += reply.retry_after  # wait exactly as long as told
    elapsed = now - T0
    assert elapsed > 3600
    # 1 + 2 + ... + 256, then 300 s each, and one second for the fifth start of the first
    # burst (one address starts four runs at once, then one a second)
    assert elapsed == pytest.approx(511 + 300 * 86 + 1)
    assert (locked, busy) == (95, 1)  # every lock was respected: one refusal, then a guess
    events = refused(hub)
    assert len(events) == 100 + 95 and events[-1] == ("BAD_PIN", 100, 300.0)
    assert len(hub.allowlist) == 0


# ----------------------------------------------------------------- joining after pairing
def test_third_worker_pairs_but_gets_session_full() -> None:
    hub = make_hub(workers=2)
    assert isinstance(join(hub, b"w1", T0), Welcome)
    assert isinstance(join(hub, b"w2", T0), Welcome)
    reply = join(hub, b"w3", T0)
    assert reject_code(reply) is RejectCode.SESSION_FULL and "2" in reply.detail
    assert len(hub.members) == 2 and fake_key(b"w3") in hub.allowlist


def test_join_after_the_session_is_done_is_session_done() -> None:
    hub = make_hub(rounds=1)
    workers = start_training(hub)
    full_round(hub, workers, T0 + 0.1)
    assert hub.done
    only(send(hub, workers[0].peer, Bye(workers[0].token), T0 + 0.2))  # a shard is free now
    assert len(hub.members) == 1
    assert reject_code(join(hub, b"late", T0 + 0.3)) is RejectCode.SESSION_DONE
    assert reject_code(join(hub, b"w1", T0 + 0.3)) is RejectCode.SESSION_DONE  # already paired
    assert len(hub.members) == 1


# ----------------------------------------------------------------- the wrong socket, bad text
def test_each_socket_takes_only_its_own_messages(hub: HubCore) -> None:
    assert isinstance(pair(hub, b"p1", T0), Paired)
    run = pair_start(hub, b"p1", T0)[0]
    wrong_way = only(send(hub, b"p1", PairStart(run.msg_a, "p1"), T0))  # allowed key, even
    assert reject_code(wrong_way) is RejectCode.MALFORMED
    for msg in (Join("p1", "cpu", TORCH), Paired(HUB_KEY, SESSION_ID, "00" * 32)):
        assert reject_code(pairing_send(hub, b"p1", msg, T0)) is RejectCode.MALFORMED
    assert len(hub.members) == 0 and hub.pairing.lockout.failures == 0


def test_lone_surrogates_are_malformed_not_a_crash(hub: HubCore) -> None:
    run = pair_start(hub, b"p1", T0)[0]
    start = HEAD + ('{"t":"pair_start","msg_a":"%s","name":"\\ud800"}' % run.msg_a).encode()
    assert reject_code(only(decode_replies(hub.handle_pairing(b"p1", [start], T0)))) \
        is RejectCode.MALFORMED
    assert isinstance(pair(hub, b"p1", T0), Paired)
    join_frame = HEAD + b'{"t":"join","name":"\\udfff","device":"cpu"}'
    reply = only(decode_replies(hub.handle(b"p1", [join_frame], T0, fake_key(b"p1"))))
    assert reject_code(reply) is RejectCode.MALFORMED and len(hub.members) == 0
