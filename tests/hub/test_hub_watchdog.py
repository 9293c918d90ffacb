"""A worker that heartbeats but never pushes (its compute hangs) loses its shard after a few
missed deadlines, and no round waits longer than the cap."""

from __future__ import annotations

from helpers.hub import T0, grads, make_hub, only, reject_code, start_training

from computeshare_desktop.events import WorkerLeft
from computeshare_desktop.hub.rounds import DeadlinePolicy
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.messages import Pong


def test_a_stuck_worker_loses_its_shard_after_three_missed_deadlines() -> None:
    hub = make_hub(workers=2, deadline_floor_s=1.0, heartbeat_timeout_s=100.0, max_missed=3)
    steady, stuck = start_training(hub)
    hub.drain_events()
    now = T0
    for r in range(3):
        now += 0.5
        assert isinstance(only(stuck.ping(hub, now)), Pong)  # alive: heartbeats go on
        steady.push(hub, now, grads(hub, 1, seed=r)[0])
        now += 9.0
        hub.tick(now)  # the deadline passes without the stuck worker's push
        assert hub.server.version == r + 1
        members = {m.worker_id for m in hub.members.members()}
        assert (stuck.welcome.worker_id in members) is (r < 2), r
    left = [e for e in hub.drain_events() if isinstance(e, WorkerLeft)]
    assert [(e.worker.id, e.reason) for e in left] == [(stuck.welcome.worker_id, "stuck")]
    assert hub.members.free_shard() == stuck.welcome.shard  # a spare can take it
    assert reject_code(only(stuck.ping(hub, now + 2))) is RejectCode.UNKNOWN_WORKER
    # the next round closes on the steady worker alone, at once
    steady.push(hub, now + 3, grads(hub, 1, seed=9)[0])
    assert hub.server.version == 4


def test_a_push_resets_the_count() -> None:
    hub = make_hub(workers=2, deadline_floor_s=1.0, heartbeat_timeout_s=100.0, max_missed=2)
    a, b = start_training(hub)
    now = T0
    for r in range(4):  # b misses every other round: never two in a row
        now += 0.5
        b.ping(hub, now)
        a.push(hub, now, grads(hub, 1, seed=r)[0])
        if r % 2:
            b.push(hub, now, grads(hub, 1, seed=10 + r)[0])
        else:
            now += 9.0
            hub.tick(now)
    assert len(hub.members.members()) == 2 and hub.server.version == 4


def test_deadlines_are_capped_whatever_the_history() -> None:
    policy = DeadlinePolicy(floor_s=2.0, factor=4.0, cap_s=60.0)
    policy.observe(1, 500.0)  # once took ages
    assert policy.wait_s({1}) == 60.0
    assert policy.deadline(0.0, 0.0, {1}, transfer_s=5.0) == 60.0
    assert policy.deadline(0.0, 59.0, {1}, transfer_s=5.0) == 59.0 + 2.0 + 5.0  # wire time
    assert DeadlinePolicy(2.0, 4.0).wait_s({1}) == 2.0
