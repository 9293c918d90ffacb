"""A paused worker, as the hub sees it: its shard goes to others, it shows as paused (not
lost), and it comes back with a JOIN alone (its key is still allowed: no PIN)."""

from __future__ import annotations

from helpers.hub import (T0, TORCH, admit, grads, join, make_hub, only, reject_code, send,
                         start_training)

from computeshare_desktop.events import RoundClosed, WorkerLeft
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.messages import Ack, Bye, Join, Welcome


def test_a_pause_frees_the_shard_for_a_spare_and_the_worker_returns_without_the_pin() -> None:
    hub = make_hub()
    w1, w2 = start_training(hub, T0)
    w1.push(hub, T0 + 0.1, grads(hub, 1)[0])
    hub.drain_events()
    ack = only(send(hub, w2.peer, Bye(w2.token, paused=True), T0 + 0.2))
    assert isinstance(ack, Ack) and ack.version == 1  # the round closed without waiting
    left = [e for e in hub.drain_events() if isinstance(e, WorkerLeft)]
    assert [(e.worker.id, e.reason) for e in left] == [(w2.welcome.worker_id, "paused")]
    spare = join(hub, b"w3", T0 + 0.3)  # the paused worker's shard goes to a spare
    assert isinstance(spare, Welcome) and spare.shard == w2.welcome.shard
    # the rounds go on with the workers there (the hub re-plans without the paused one)
    w1.pull(hub, T0 + 0.4, after=0)
    w1.push(hub, T0 + 0.5, grads(hub, 1, seed=1)[0])
    assert hub.server.version == 2
    assert any(isinstance(e, RoundClosed) for e in hub.drain_events())
    # resume: a JOIN from the same key, with no pairing (no PIN); the spare holds the shard
    assert reject_code(only(send(hub, w2.peer, Join("w2", "cpu", TORCH), T0 + 1.0))) \
        is RejectCode.SESSION_FULL  # the worker core waits and asks again (FULL_WAIT)
    only(send(hub, b"w3", Bye(spare.token), T0 + 1.1))
    back = only(send(hub, w2.peer, Join("w2", "cpu", TORCH), T0 + 1.2))
    assert isinstance(back, Welcome) and back.shard == w2.welcome.shard  # its cache's shard


def test_a_plain_goodbye_still_reads_left() -> None:
    hub = make_hub()
    w1 = admit(hub, b"w1", T0)
    hub.drain_events()
    assert isinstance(only(send(hub, w1.peer, Bye(w1.token), T0)), Ack)
    assert [e.reason for e in hub.drain_events() if isinstance(e, WorkerLeft)] == ["left"]
