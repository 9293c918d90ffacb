"""Membership through HubCore: heartbeats, reaping, leaving, shards handed on, wrong models."""

from __future__ import annotations

from helpers.hub import (T0, admit, grads, join, make_hub, only, reject_code, send, start_training,
                         weights)

from computeshare_desktop.events import RoundClosed, WorkerLeft
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.messages import Ack, Bye, Pull, Reject, Welcome


def test_silent_worker_is_reaped_and_its_shard_goes_to_the_next() -> None:
    hub = make_hub(heartbeat_timeout_s=6.0)
    w1, w2 = admit(hub, b"w1", T0), admit(hub, b"w2", T0)
    assert (w1.welcome.shard, w2.welcome.shard) == (0, 1)
    assert reject_code(join(hub, b"w3", T0)) is RejectCode.SESSION_FULL
    w1.ping(hub, T0 + 5.0)
    hub.drain_events()
    assert hub.tick(T0 + 6.0) == [] and len(hub.members) == 2  # exactly at the timeout: alive
    hub.tick(T0 + 6.01)
    assert [m.worker_id for m in hub.members.members()] == [w1.welcome.worker_id]
    left = [e for e in hub.drain_events() if isinstance(e, WorkerLeft)]
    assert [(e.worker.shard, e.reason) for e in left] == [(1, "silent")]
    assert reject_code(only(w2.ping(hub, T0 + 6.1))) is RejectCode.UNKNOWN_WORKER
    w3 = join(hub, b"w3", T0 + 6.2)
    assert isinstance(w3, Welcome)
    assert (w3.shard, w3.worker_id) == (1, 3)  # the freed shard, a new id
    assert w3.shard_size == w2.welcome.shard_size
    assert hub.tick(T0 + 11.0) == [] and len(hub.members) == 2  # w1 seen at 5.0, w3 at 6.2


def test_reaping_lets_a_round_finish_with_the_survivors() -> None:
    hub = make_hub(heartbeat_timeout_s=6.0, deadline_floor_s=100.0)
    w1, w2 = start_training(hub, T0)
    before = weights(hub)
    g1 = grads(hub, 1, seed=2)[0]
    assert isinstance(only(w1.push(hub, T0 + 5.0, g1)), Ack)
    hub.tick(T0 + 5.5)
    assert hub.server.version == 0  # w2 is still expected
    hub.tick(T0 + 6.5)  # w2 silent for 6.5 s: gone, and the round is complete without it
    assert hub.server.version == 1
    (event,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert (event.contributors, event.complete) == (1, True)
    assert ((weights(hub) - (before - hub.config.lr * g1)).abs().max()) < 1e-7


def test_bye_frees_the_shard_and_closes_a_round_it_was_holding() -> None:
    hub = make_hub(deadline_floor_s=100.0)
    w1, w2 = start_training(hub, T0)
    w1.push(hub, T0 + 0.1, grads(hub, 1)[0])
    assert hub.server.version == 0
    ack = only(send(hub, w2.peer, Bye(w2.token), T0 + 0.2))
    assert isinstance(ack, Ack) and ack.version == 1  # the round closed on the goodbye
    assert len(hub.members) == 1 and hub.members.free_shard() == 1
    assert reject_code(only(w2.ping(hub, T0 + 0.3))) is RejectCode.UNKNOWN_WORKER
    assert isinstance(join(hub, b"w3", T0 + 0.4), Welcome)


def test_parked_pull_of_a_reaped_worker_is_told_to_rejoin() -> None:
    hub = make_hub(heartbeat_timeout_s=6.0, deadline_floor_s=100.0, long_poll_ms=60_000)
    w1, w2 = start_training(hub, T0)
    w1.ping(hub, T0 + 5.0)
    assert w2.pull(hub, T0 + 0.5, after=0, wait_ms=60_000) == []
    hub.tick(T0 + 6.6)  # w2 (last seen 0.5) is gone; its PULL is still parked
    out = w1.push(hub, T0 + 6.7, grads(hub, 1)[0])  # closes the round and releases the poll
    told = only(out, w2.peer)
    assert reject_code(told) is RejectCode.UNKNOWN_WORKER
    assert hub.server.version == 1


def test_pull_with_another_model_is_arch_mismatch_and_removes_the_worker() -> None:
    hub = make_hub()
    w1 = admit(hub, b"w1", T0)
    reply = only(send(hub, w1.peer, Pull(w1.token, -1, 100, "0" * 16), T0))
    assert reject_code(reply) is RejectCode.ARCH_MISMATCH
    assert hub.fingerprint in reply.detail
    assert len(hub.members) == 0
    assert reject_code(only(w1.ping(hub, T0))) is RejectCode.UNKNOWN_WORKER


def test_replies_go_to_the_peer_that_asked() -> None:
    hub = make_hub()
    w1 = admit(hub, b"w1", T0)
    # a token and its key identify a worker, not the peer id it happens to use (a reconnect)
    out = send(hub, b"other", Bye(w1.token), T0, key=w1.key)
    assert [o.peer for o in out] == [b"other"] and isinstance(out[0].msg, Ack)
    assert len(hub.members) == 0
    assert isinstance(only(w1.ping(hub, T0)), Reject)
