"""Work sized to each device, local steps and the outer optimizer, as HubCore runs them."""

from __future__ import annotations

import pytest
import torch
from helpers.hub import T0, Worker, grads, make_hub, only, optimizer_copy, start_training, weights

from computeshare_desktop.events import RoundClosed
from computeshare_desktop.hub import HubCore
from computeshare_desktop.hub.planner import WorkPlanner
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.messages import Ack, Model


# ----------------------------------------------------------------- the planner alone
def test_equal_workers_keep_equal_batches_despite_noise() -> None:
    planner = WorkPlanner(32)
    gen = torch.Generator().manual_seed(0)
    for _ in range(30):
        for w in (1, 2, 3):
            noise = 1 + 0.2 * (torch.rand(1, generator=gen).item() - 0.5)  # +-10%
            planner.observe(w, 32, 0.1 * noise)
        assert planner.plan([1, 2, 3]) == {1: 32, 2: 32, 3: 32}


def test_a_three_times_faster_worker_gets_three_times_the_batch() -> None:
    planner = WorkPlanner(32)
    assert planner.plan([1, 2]) == {1: 32, 2: 32}  # nothing measured yet
    for _ in range(3):
        planner.observe(1, 32, 0.3)  # 107 samples/s
        planner.observe(2, 32, 0.1)  # 320 samples/s
    plan = planner.plan([1, 2])
    assert plan == {1: 16, 2: 48} and sum(plan.values()) == 64
    # with the new split both finish together: the plan is kept
    for _ in range(10):
        planner.observe(1, 16, 0.15)
        planner.observe(2, 48, 0.15)
    assert planner.plan([1, 2]) == plan


def test_shares_are_bounded_and_the_total_is_kept() -> None:
    planner = WorkPlanner(10, max_factor=2.0)
    for _ in range(3):
        planner.observe(1, 10, 100.0)  # a very slow worker
        planner.observe(2, 10, 0.01)
        planner.observe(3, 10, 0.01)
    plan = planner.plan([1, 2, 3])
    assert plan[1] >= 1 and max(plan.values()) <= 20 and sum(plan.values()) == 30


def test_balancing_can_be_turned_off_and_leavers_are_forgotten() -> None:
    planner = WorkPlanner(8, balance=False)
    for _ in range(5):
        planner.observe(1, 8, 1.0)
        planner.observe(2, 8, 0.1)
    assert planner.plan([1, 2]) == {1: 8, 2: 8}
    planner.forget(2)
    assert planner.speed(2) is None and planner.speed(1) == 8.0


# ----------------------------------------------------------------- through the hub
def drive(hub: HubCore, workers: list[Worker], speeds: list[float], rounds: int,
          now: float = T0) -> list[dict[int, tuple[int, int]]]:
    """Rounds where worker i computes ``speeds[i]`` samples/s; each round's (start, batch)."""
    plans = []
    after = [-1] * len(workers)
    for _ in range(rounds):
        tasks = {}
        for i, w in enumerate(workers):
            (o,) = [o for o in w.pull(hub, now, after=after[i]) if isinstance(o.msg, Model)]
            tasks[i] = (o.msg.start, o.msg.batch)
            after[i] = o.msg.version
        for i, (w, g) in enumerate(zip(workers, grads(hub, len(workers)), strict=True)):
            batch = tasks[i][1]
            reply = w.push(hub, now, g, samples=batch, compute_ms=1000 * batch / speeds[i])
            assert isinstance(only(reply, w.peer), Ack)
        plans.append(tasks)
        now += 1.0
    return plans


def test_the_hub_sizes_batches_to_speed_and_reads_each_shard_in_order() -> None:
    hub = make_hub(rounds=20, batch_size=16)
    workers = start_training(hub)
    plans = drive(hub, workers, speeds=[100.0, 300.0], rounds=10)
    assert plans[0] == {0: (0, 16), 1: (0, 16)}
    assert plans[-1][0][1] == 8 and plans[-1][1][1] == 24  # 1:3, the global batch kept
    for i in (0, 1):  # each shard's stream is read without gaps or repeats
        ends = [start + batch for start, batch in (p[i] for p in plans)]
        assert [p[i][0] for p in plans[1:]] == ends[:-1]
    events = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert all(e.samples == 32 for e in events)
    assert [w.batch for w in events[-1].workers] == [8, 24]
    assert all(0 < w.busy <= 1 for w in events[-1].workers)


def test_the_learning_rate_follows_the_global_batch() -> None:
    hub = make_hub(lr=0.02, batch_size=8, workers=3)
    workers = start_training(hub)
    before = weights(hub)
    gs = grads(hub, 2, seed=4)
    # a round that closes at its deadline with two of three pushes: 12 samples
    workers[0].push(hub, T0, gs[0], samples=8, bandwidth=1e9)
    workers[1].push(hub, T0, gs[1], samples=4, bandwidth=1e9)
    hub.tick(T0 + hub.config.deadline_floor_s + 0.1)
    assert hub.server.version == 1
    mean = (8 * gs[0] + 4 * gs[1]) / 12
    assert torch.allclose(weights(hub), before - 0.02 * (12 / 8) * mean, atol=1e-7, rtol=0)


def test_pushes_beyond_the_planned_work_are_refused() -> None:
    hub = make_hub(batch_size=8)
    w1, w2 = start_training(hub)
    g = grads(hub, 1)[0]
    msg = only(w1.push(hub, T0, g, samples=9))
    assert RejectCode(msg.code) is RejectCode.MALFORMED


# ----------------------------------------------------------------- local steps
def test_local_steps_are_planned_and_the_outer_nesterov_step_is_applied() -> None:
    """Versions count steps: rounds of 4 local steps advance 0 -> 4 -> 8 -> 10 (cut short)."""
    hub = make_hub(local_steps=4, lr=0.01, batch_size=8, outer_lr=0.7, rounds=10)
    w1, w2 = start_training(hub)
    model, _, params = optimizer_copy(hub)
    outer = torch.optim.SGD(params, lr=0.7, momentum=0.9, nesterov=True)
    for version, steps in ((0, 4), (4, 4), (8, 2)):
        (o,) = [o for o in w1.pull(hub, T0, after=version - 1) if isinstance(o.msg, Model)]
        assert (o.msg.version, o.msg.steps, o.msg.batch) == (version, steps, 8)
        assert o.msg.lr == pytest.approx(0.01 * 16 / 8)  # the global batch's lr, per step
        d1, d2 = grads(hub, 2, seed=version)
        assert isinstance(only(w1.push(hub, T0, d1, samples=8 * steps, steps=steps), b"w1"),
                          Ack)
        assert isinstance(only(w2.push(hub, T0, d2, samples=8 * steps, steps=steps), b"w2"),
                          Ack)
        assert hub.server.version == version + steps
        mean = (d1 + d2) / 2
        offset = 0
        for p in params:
            p.grad = mean[offset:offset + p.numel()].view_as(p).clone()
            offset += p.numel()
        outer.step()
        expected = torch.nn.utils.parameters_to_vector(params).detach()
        assert torch.allclose(weights(hub), expected, atol=1e-6, rtol=0)
    rounds = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert [(e.version, e.steps, e.samples) for e in rounds] == [
        (4, 4, 64), (8, 4, 64), (10, 2, 32)]
    assert hub.done


def test_local_steps_with_one_step_and_outer_sgd_is_the_synchronous_step() -> None:
    """The worker pushes lr * g after one step; the outer SGD at lr 1 makes it today's step."""
    sync, local = make_hub(lr=0.01), make_hub(lr=0.01, local_steps=1, outer="sgd")
    for hub in (sync, local):
        w1, w2 = start_training(hub)
        for r in range(3):
            g1, g2 = grads(hub, 2, seed=r)
            scale = 0.01 * 16 / 8 if hub is local else 1.0  # what one local step changes
            w1.push(hub, T0, g1 * scale)
            w2.push(hub, T0, g2 * scale)
    assert torch.allclose(weights(sync), weights(local), atol=1e-7, rtol=0)
