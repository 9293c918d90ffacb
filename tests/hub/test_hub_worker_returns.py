"""The same machine (the same key) back after a pause or a lost connection keeps its worker
id and its counts: the hub's table keeps one row whose Pushed counts all its gradients, as
the worker's own "N gradients pushed" does, and the hub says it resumed (not "Worker 1
(vm · CPU) paused", then "Worker 2 joined", its table's Pushed 7 against 60 pushed)."""

from __future__ import annotations

from helpers.hub import T0, admit, full_round, make_hub, send, start_training

from computeshare_desktop.events import WorkerJoined, WorkerLeft
from computeshare_desktop.protocol.messages import Bye


def joined(hub) -> list[WorkerJoined]:
    return [e for e in hub.drain_events() if isinstance(e, WorkerJoined)]


def test_a_paused_worker_resumes_under_its_id_with_its_counts() -> None:
    hub = make_hub(workers=2, rounds=50, deadline_floor_s=100.0)
    w1, w2 = start_training(hub, T0)
    for r in range(3):
        full_round(hub, [w1, w2], T0 + 1 + r, seed=r)
    first = next(m for m in hub.members.members() if m.worker_id == w1.welcome.worker_id)
    assert first.pushed == 3
    send(hub, w1.peer, Bye(w1.token, paused=True), T0 + 5)
    assert [e.reason for e in hub.drain_events() if isinstance(e, WorkerLeft)] == ["paused"]
    back = admit(hub, w1.peer, T0 + 6)
    assert back.welcome.worker_id == w1.welcome.worker_id and back.token != w1.token
    (event,) = joined(hub)
    assert event.returning == "paused" and event.worker.id == w1.welcome.worker_id
    assert (event.worker.pushed, event.worker.samples) == (3, first.samples)
    member = hub.members.get_quiet(back.token)
    assert member is not None and member.shard == first.shard
    # a new machine still gets a new id, and says it is new
    hub.members.remove(w2.token, "test", "silent")
    other = admit(hub, b"w9", T0 + 7)
    assert other.welcome.worker_id == 3 and joined(hub)[0].returning == ""


def test_a_machine_lost_and_back_keeps_its_id() -> None:
    hub = make_hub(workers=2, heartbeat_timeout_s=6.0, deadline_floor_s=100.0)
    w1, w2 = start_training(hub, T0)
    w1.ping(hub, T0 + 5.0)
    hub.tick(T0 + 6.6)  # w2 silent: reaped
    hub.drain_events()
    back = admit(hub, w2.peer, T0 + 7)
    assert back.welcome.worker_id == w2.welcome.worker_id
    assert joined(hub)[0].returning == "silent"
