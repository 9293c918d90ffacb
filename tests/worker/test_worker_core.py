"""WorkerCore against an in-process HubCore, both sans-I/O, on a fake clock (see worker_sim):
pairing, joining, the shard, rounds with deltas, refusals, rejoining, stops and the end."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from helpers.hub import HUB_KEY, WRONG, fake_key, make_hub, pair
from worker_sim import DEVICE, Peer, Sim

from computeshare_desktop.errors import HubStoppedError, HubUnreachableError, RejectedError
from computeshare_desktop.events import (HubStopped, Joined, ModelReceived, PairedWith,
                                         PairingWait, Pushed, Rejoining, Resync, SessionFull,
                                         ShardReceived, WorkerDone, WorkerLeft)
from computeshare_desktop.codec import get_codec
from computeshare_desktop.protocol import RejectCode, encode
from computeshare_desktop.protocol.messages import (Bye, Join, Paired, PairFinish, PairStart,
                                                    Pull, Push, Reject, Shard)
from computeshare_desktop.protocol.pake import key_fingerprint
from computeshare_desktop.graph import torch_release
from computeshare_desktop.worker import BuiltinFactory
from computeshare_desktop.worker.core import Phase
from computeshare_desktop.worker.download import MAX_SHARD_REPLY
from computeshare_desktop.worker.effects import Emit, Finish, Goodbye, WaitUntil
from computeshare_desktop.worker.link import ASSUMED_RATE, SAFETY
from testbed.fake_compute import FakeFactory


def kinds(events: list) -> list[str]:
    """Event kinds with repeats collapsed: the shape of a session."""
    out: list[str] = []
    for e in events:
        if not out or out[-1] != e.kind:
            out.append(e.kind)
    return out


def error_of(peer) -> BaseException | None:
    assert peer.finish is not None, peer.action
    return peer.finish.error


# ----------------------------------------------------------------- a whole session
def test_two_workers_pair_join_train_and_end_with_the_hub() -> None:
    hub = make_hub(rounds=3)
    sim = Sim(hub)
    workers = [sim.worker(b"w1"), sim.worker(b"w2")]
    sim.finish_all()
    assert hub.done
    for w in workers:
        assert kinds(w.events) == ["paired", "joined", "shard", "model_received", "pushed",
                                   "done"]
        assert w.of_kind(ModelReceived) == [ModelReceived("simplenet", hub.server.numel, 0,
                                                          "built-in")]
        paired = w.of_kind(PairedWith)[0]
        assert paired.hub_key == key_fingerprint(HUB_KEY) and paired.session_id == "s1"
        joined = w.of_kind(Joined)[0]
        assert (joined.device, joined.num_shards, joined.rounds) == (DEVICE, 2, 3)
        shard = w.of_kind(ShardReceived)
        assert shard[-1].received == shard[-1].total == w.factory.shard_sizes[0]
        pushes = w.of_kind(Pushed)
        assert [p.version for p in pushes] == [0, 1, 2] and all(p.accepted for p in pushes)
        assert [p.pushed for p in pushes] == [1, 2, 3]
        assert w.events[-1] == WorkerDone(pushed=3, rejected=0, version=2, left=False)
        result = w.finish.result
        assert (result.pushed, result.rejected, result.version) == (3, 0, 2)
        assert result.seconds == pytest.approx(sim.now - sim.start)
        # the pairing channel, then the hub's; the goodbye after the hub's DONE
        assert [s.hub_key for s in w.sent[:2]] == [None, None]
        assert {s.hub_key for s in w.sent[2:]} == {HUB_KEY}
        assert [type(m) for m in w.messages()[:4]] == [PairStart, PairFinish, Join, Shard]
        assert isinstance(w.messages()[-1], Bye)


def test_the_model_copy_follows_deltas_bit_for_bit() -> None:
    hub = make_hub(rounds=4, codec="zstd")
    sim = Sim(hub)
    workers = [sim.worker(b"w1"), sim.worker(b"w2")]
    seen: list[torch.Tensor] = []
    sim.run(lambda: all(w.compute is not None for w in workers))
    for version in range(4):  # each round's work starts from the hub's weights, bitwise
        sim.run(lambda v=version: all(len(w.compute.seen) > v or w.finish for w in workers))
        seen.append(hub.server.flat().clone())
        assert all(torch.equal(w.compute.seen[version], seen[-1]) for w in workers)
    sim.finish_all()
    for w in workers:
        assert not w.of_kind(Resync)
        assert [p.after for p in w.messages(Pull)][:4] == [-1, 0, 1, 2]  # deltas after the first


def test_the_builtin_compute_plugs_into_the_core() -> None:
    hub = make_hub(rounds=2)
    sim = Sim(hub)
    workers = [sim.worker(name, factory=BuiltinFactory(torch.device("cpu")))
               for name in (b"w1", b"w2")]
    before = hub.server.flat().clone()
    sim.finish_all()
    assert all(w.finish.result.pushed == 2 for w in workers)
    assert all(w.compute.numel == hub.server.numel for w in workers)
    assert not torch.equal(before, hub.server.flat())


def test_a_model_this_machine_cannot_build_ends_with_arch_mismatch_and_a_goodbye() -> None:
    hub = make_hub()
    sim = Sim(hub)
    odd = sim.worker(b"odd", factory=FakeFactory(hub.server.numel, refuse=True))
    sim.finish_all()
    error = error_of(odd)
    assert isinstance(error, RejectedError) and error.code is RejectCode.ARCH_MISMATCH
    assert isinstance(odd.messages()[-1], Bye) and not odd.messages(Shard)  # before the shard
    assert len(hub.members) == 0


# ----------------------------------------------------------------- pairing and keys
def test_a_wrong_pin_ends_with_bad_pin_and_no_goodbye() -> None:
    hub = make_hub()
    sim = Sim(hub)
    guesser = sim.worker(b"guesser", pin=WRONG)
    sim.finish_all()
    error = error_of(guesser)
    assert isinstance(error, RejectedError) and error.code is RejectCode.BAD_PIN
    assert guesser.events == [] and not guesser.messages(Bye)
    assert len(hub.allowlist) == 0


def test_a_locked_out_source_waits_then_pairs_with_a_fresh_run() -> None:
    hub = make_hub()
    sim = Sim(hub)
    for i in range(20):  # wrong PINs from the LAN until pairing is locked out
        assert isinstance(pair(hub, b"x%d" % i, sim.now, pin=WRONG, source=f"lan/{i}"), Reject)
        if hub.pairing.lockout_for("lan/w1").retry_after(sim.now) > 0:
            break
    w = sim.worker(b"w1")
    sim.run(lambda: w.of_kind(Joined))
    waits = w.of_kind(PairingWait)
    assert waits and waits[0].code == "LOCKED_OUT" and 0.5 <= waits[0].retry_after <= 60
    starts = w.messages(PairStart)
    assert len(starts) >= 2 and starts[0].msg_a != starts[-1].msg_a  # a fresh SPAKE2 run
    assert kinds(w.events)[-2:] == ["paired", "joined"]


def test_a_remembered_key_joins_at_once_without_the_pin() -> None:
    hub = make_hub()
    hub.allowlist.add(fake_key(b"w1"), "w1")
    sim = Sim(hub)
    w = sim.worker(b"w1", pin="", hub_key=HUB_KEY)
    sim.run(lambda: w.of_kind(Joined))
    assert isinstance(w.messages()[0], Join) and not w.of_kind(PairedWith)


def test_a_forgotten_key_pairs_again_with_the_pin() -> None:
    hub = make_hub()  # a new session: it does not know the remembered key
    sim = Sim(hub)
    w = sim.worker(b"w1", hub_key=HUB_KEY)
    sim.run(lambda: w.of_kind(Joined))
    assert [type(m) for m in w.messages()[:4]] == [Join, PairStart, PairFinish, Join]
    assert kinds(w.events) == ["paired", "joined"]


def test_a_forgotten_key_without_a_pin_says_to_join_with_the_pin() -> None:
    hub = make_hub()
    sim = Sim(hub)
    w = sim.worker(b"w1", pin="", hub_key=HUB_KEY)
    sim.finish_all()
    error = error_of(w)
    assert isinstance(error, RejectedError) and error.code is RejectCode.NOT_PAIRED
    assert "PIN" in error.detail and w.messages() == [Join(name="w1", device=DEVICE,
                                                                   torch=torch_release())]


def test_a_hub_key_other_than_the_advertised_one_is_refused() -> None:
    hub = make_hub()
    sim = Sim(hub)
    w = sim.worker(b"w1", expected_key="0123456789abcdef")
    sim.finish_all()
    error = error_of(w)
    assert isinstance(error, RejectedError) and error.code is RejectCode.MALFORMED
    assert "advertised" in error.detail and not w.messages(Join)


# ----------------------------------------------------------------- a full session
def full_session(**spare_options: Any) -> tuple[Sim, Peer, Peer]:
    """A one-shard session that trains (0.5 s a round), and a spare worker asking to join."""
    hub = make_hub(workers=1, rounds=1000)
    sim = Sim(hub)
    first = sim.worker(b"first", factory=FakeFactory(hub.server.numel, seconds=0.5))
    sim.run(lambda: first.of_kind(Pushed))
    return sim, first, sim.worker(b"spare", **spare_options)


def test_a_full_session_is_asked_again_until_give_up() -> None:
    sim, _, extra = full_session(give_up_s=7.0)
    began = sim.now
    sim.run(lambda: extra.finish)
    error = error_of(extra)
    assert isinstance(error, RejectedError) and error.code is RejectCode.SESSION_FULL
    assert sim.now - began > 7.0
    assert kinds(extra.events) == ["paired", "session_full"]
    assert len(extra.of_kind(SessionFull)) == 4  # asked at 0, 2, 4, 6 s; refused at 8 s
    assert [type(e) for e in extra.effects if isinstance(e, WaitUntil)] == [WaitUntil] * 4


def test_a_full_session_takes_a_shard_that_frees_up() -> None:
    sim, first, spare = full_session()
    sim.run(lambda: spare.of_kind(SessionFull))
    first.core.leave()
    sim.run(lambda: spare.of_kind(Pushed))
    assert first.events[-1] == WorkerDone(pushed=first.core.pushed, rejected=0,
                                          version=first.core.version, left=True)
    assert spare.of_kind(Joined)[0].shard == first.of_kind(Joined)[0].shard


def test_a_stop_during_the_wait_for_a_shard_ends_at_once() -> None:
    sim, _, spare = full_session()
    sim.run(lambda: spare.of_kind(SessionFull))
    spare.core.stop()
    assert isinstance(spare.action, WaitUntil)
    spare.take(spare.core.woke(sim.now))
    error = error_of(spare)
    assert isinstance(error, HubUnreachableError) and "stopped while waiting" in str(error)


# ----------------------------------------------------------------- rejoining and stops
def test_a_reaped_worker_rejoins_and_trains_again() -> None:
    hub = make_hub(rounds=1000)
    sim = Sim(hub)
    w1, w2 = sim.worker(b"w1"), sim.worker(b"w2")
    sim.run(lambda: w1.of_kind(Pushed) and w2.of_kind(Pushed))
    w1.paused = True  # its link is cut: the hub reaps it after heartbeat_timeout_s
    sim.run(lambda: any(isinstance(e, WorkerLeft) for e in hub.drain_events()))
    w1.paused = False
    pushed = len(w1.of_kind(Pushed))
    sim.run(lambda: len(w1.of_kind(Pushed)) > pushed + 2)
    assert kinds(w1.events)[-5:] == ["rejoin", "joined", "shard", "model_received", "pushed"]
    assert len(w1.of_kind(Rejoining)) == 1 and len(w1.messages(Join)) == 2
    assert not w1.messages(PairStart)[1:]  # the key is still allowed: no PIN again


def test_a_stopping_hub_ends_its_workers_without_a_goodbye() -> None:
    hub = make_hub(rounds=1000)
    sim = Sim(hub)
    workers = [sim.worker(b"w1"), sim.worker(b"w2")]
    sim.run(lambda: all(w.of_kind(Pushed) for w in workers))
    sim._deliver(hub.stop())
    sim.finish_all()
    for w in workers:
        assert isinstance(error_of(w), HubStoppedError)
        assert w.events[-1] == HubStopped(version=hub.server.version)
        assert not w.messages(Bye) and not w.of_kind(WorkerDone)


def test_a_stop_the_hub_announced_elsewhere_ends_after_the_round_in_progress() -> None:
    hub = make_hub(rounds=1000)
    sim = Sim(hub)
    workers = [sim.worker(b"w1"), sim.worker(b"w2")]
    sim.run(lambda: all(w.core.phase is Phase.WORK for w in workers))
    workers[0].core.stopped_by_hub(7)  # its event feed said so, mid-compute
    sim.run(lambda: workers[0].finish)
    w = workers[0]
    assert isinstance(error_of(w), HubStoppedError) and "version 7" in str(error_of(w))
    assert [type(e) for e in w.events[-2:]] == [Pushed, HubStopped]
    assert not w.messages(Bye)


def test_leaving_says_goodbye_after_the_round_and_frees_the_shard() -> None:
    hub = make_hub(rounds=1000)
    sim = Sim(hub)
    w1, _ = sim.worker(b"w1"), sim.worker(b"w2")
    sim.run(lambda: w1.core.phase is Phase.WORK)
    w1.core.leave()
    sim.run(lambda: w1.finish)
    assert [type(e) for e in w1.effects[-3:]] == [Goodbye, Emit, Finish]
    assert [type(e) for e in w1.events[-2:]] == [Pushed, WorkerDone] and w1.events[-1].left
    assert [m.token for m in w1.messages(Bye)] == [w1.core.token]
    assert len(hub.members) == 1


# ----------------------------------------------------------------- pace and timeouts
def test_max_rate_rests_before_the_push_and_counts_the_rest_as_compute() -> None:
    hub = make_hub(rounds=2)
    sim = Sim(hub)
    slow = sim.worker(b"slow", max_rate=100.0)  # batch 8: 80 ms a round
    sim.worker(b"other")
    sim.finish_all()
    rests = [e for e in slow.effects if isinstance(e, WaitUntil)]
    assert len(rests) == 2
    assert [p.compute_ms for p in slow.messages(Push)] == pytest.approx([80.0, 80.0])
    assert [p.compute_s for p in slow.of_kind(Pushed)] == pytest.approx([0.08, 0.08])


def test_timeouts_follow_the_bytes_each_request_moves() -> None:
    hub = make_hub(rounds=2)
    sim = Sim(hub)
    w = sim.worker(b"w1", request_timeout_s=3.0, pull_wait_ms=1500)
    sim.worker(b"w2")
    sim.finish_all()
    by_kind = {type(s.message): s.timeout_s for s in reversed(w.sent)}  # each kind's first
    assert by_kind[PairStart] == by_kind[Join] == 3.0
    assert by_kind[Shard] == pytest.approx(3.0 + SAFETY * MAX_SHARD_REPLY / ASSUMED_RATE)
    model_bytes = 4 * hub.server.numel  # the most a pull brings back, the link shared by 2
    assert by_kind[Pull] == pytest.approx(3.0 + 1.5 + SAFETY * 2 * model_bytes / ASSUMED_RATE)
    push = next(s for s in w.sent if isinstance(s.message, Push))
    assert push.timeout_s == pytest.approx(
        3.0 + SAFETY * 2 * len(push.frames[1]) / ASSUMED_RATE)


def test_a_payload_filter_changes_what_a_push_carries() -> None:
    hub = make_hub(rounds=1, codec="raw")
    sim = Sim(hub)
    calls = []

    def poison(codec, payload, version):  # type: ignore[no-untyped-def]
        calls.append(version)
        return codec.encode(codec.decode(payload, hub.server.numel) * 100)

    w = sim.worker(b"w1", payload_filter=poison)
    sim.worker(b"w2")
    sim.finish_all()
    assert calls == [0] and w.finish.result.pushed == 1
    push = next(s for s in w.sent if isinstance(s.message, Push))
    sent = get_codec(push.message.codec).decode(push.frames[1], hub.server.numel)
    assert torch.allclose(sent, w.compute.grad * 100)


def test_paired_reply_is_checked_before_the_key_is_pinned() -> None:
    hub = make_hub()
    sim = Sim(hub)
    w = sim.worker(b"w1")
    sim.run(lambda: w.core.phase is Phase.PAIR_FINISH)
    forged = Paired(hub_key=HUB_KEY, session_id="s1", proof="00" * 32)
    w.take(w.core.replied(encode(forged), sim.now))
    error = error_of(w)
    assert isinstance(error, RejectedError) and error.code is RejectCode.BAD_PIN
    assert w.core.hub_key is None and len(hub.members) == 0


def test_the_core_does_no_io_keeps_no_clock_and_starts_no_thread() -> None:
    """The core's modules import nothing that reaches a socket, a clock or a thread."""
    import ast
    from pathlib import Path

    import computeshare_desktop.worker as worker

    banned = {"socket", "zmq", "threading", "time", "asyncio", "selectors", "subprocess"}
    here = Path(worker.__file__).parent
    for name in ("core", "pairing", "download", "rounds", "effects", "liveness", "link",
                 "replica", "updates"):
        tree = ast.parse((here / f"{name}.py").read_text(encoding="utf-8"))
        imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module and not node.level}
        assert not imported & banned, (name, imported & banned)
