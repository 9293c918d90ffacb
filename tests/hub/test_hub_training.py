"""Rounds through HubCore: start, long-polls, averaging and the SGD step, deadlines, DONE."""

from __future__ import annotations

import math

import pytest
import torch
from helpers.hub import (T0, admit, decode_replies, full_round, grads, make_hub, only,
                         optimizer_copy, reject_code, start_training, weights)

from computeshare_desktop.codec import get_codec
from computeshare_desktop.events import RoundClosed, StateChanged
from computeshare_desktop.hub import HubCore
from computeshare_desktop.hub.rounds import DeadlinePolicy
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.messages import Ack, Done, Model, Pong, Waiting


def model_weights(hub: HubCore, msg: Model, body: list) -> torch.Tensor:
    assert msg.numel == hub.server.numel
    return get_codec(msg.codec).decode(body[0], msg.numel)


def test_training_waits_for_every_worker_to_pull() -> None:
    hub = make_hub()
    w1, w2 = admit(hub, b"w1", T0), admit(hub, b"w2", T0)
    assert w1.pull(hub, T0, wait_ms=1500) == []  # parked: nobody to train with yet
    assert hub.state.value == "waiting"
    # a push before training starts is refused
    assert reject_code(only(w1.push(hub, T0, grads(hub, 1)[0], version=0))) \
        is RejectCode.NOT_TRAINING
    assert hub.tick(T0 + 1.49) == []
    msg = only(decode_replies(hub.tick(T0 + 1.5)), b"w1")
    assert isinstance(msg, Waiting) and msg.version == 0 and msg.state == "waiting"
    assert hub.tick(T0 + 1.9) == []  # answered once
    # parked again, then the second worker's PULL starts training and releases both
    assert w1.pull(hub, T0 + 2) == []
    replies = w2.pull(hub, T0 + 2.5)
    assert {r.peer for r in replies} == {b"w1", b"w2"}
    initial = weights(hub)
    for r in replies:
        assert isinstance(r.msg, Model) and r.msg.version == 0
        assert torch.equal(model_weights(hub, r.msg, r.body), initial)
    assert hub.state.value == "training"
    assert [e.state for e in hub.drain_events() if isinstance(e, StateChanged)] == ["training"]


def test_pull_wait_is_capped_by_the_hub() -> None:
    hub = make_hub(long_poll_ms=500)
    w1 = admit(hub, b"w1", T0)
    w1.pull(hub, T0, wait_ms=60_000)
    assert hub.tick(T0 + 0.49) == []
    assert isinstance(only(decode_replies(hub.tick(T0 + 0.5))), Waiting)


def test_pull_of_a_known_version_parks_until_the_next_one() -> None:
    hub = make_hub()
    w1, w2 = start_training(hub)
    assert w1.pull(hub, T0, after=0) == []
    assert w2.pull(hub, T0, after=0) == []
    out = full_round(hub, [w1, w2], T0 + 0.2)
    models = [o for o in out if isinstance(o.msg, Model)]
    assert sorted(o.peer for o in models) == [b"w1", b"w2"]
    assert all(o.msg.version == 1 for o in models)
    assert sorted(type(o.msg).__name__ for o in out if o.peer == b"w2") == ["Ack", "Model"]
    assert hub.tick(T0 + 5) == []  # nothing left parked


def test_two_pushes_make_one_averaged_sgd_step_with_scaled_lr() -> None:
    hub = make_hub(lr=0.05, momentum=0.9, batch_size=24)
    w1, w2 = start_training(hub)
    model, sgd, params = optimizer_copy(hub)
    before = weights(hub)
    for version in range(3):  # three rounds, so momentum matters
        g1, g2 = grads(hub, 2, seed=version)
        s1, s2 = 8, 24  # unequal batches: the mean is sample-weighted
        assert isinstance(only(w1.push(hub, T0, g1, samples=s1, loss=2.0), b"w1"), Ack)
        assert hub.server.version == version  # one push does not close a round of two
        out = w2.push(hub, T0, g2, samples=s2, loss=1.0)
        assert isinstance(only(out, b"w2"), Ack) and only(out, b"w2").version == version + 1
        assert hub.server.version == version + 1  # exactly one step
        mean = (g1 * s1 + g2 * s2) / (s1 + s2)
        offset = 0
        for p in params:
            p.grad = mean[offset:offset + p.numel()].view_as(p).clone()
            offset += p.numel()
        for group in sgd.param_groups:
            group["lr"] = 0.05 * (s1 + s2) / 24  # the linear scaling rule: lr follows samples
        sgd.step()
        expected = torch.nn.utils.parameters_to_vector(params).detach()
        assert torch.allclose(weights(hub), expected, atol=1e-7, rtol=0)
        rounds = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
        assert len(rounds) == 1
        assert rounds[0].loss == pytest.approx((2.0 * 8 + 1.0 * 24) / 32)
    assert not torch.allclose(weights(hub), before)


def test_first_step_is_plain_sgd_by_hand() -> None:
    """Independent of torch.optim: the first momentum step is w - lr * n * mean(g)."""
    hub = make_hub(lr=0.01)
    w1, w2 = start_training(hub)
    g1, g2 = grads(hub, 2, seed=7)
    before = weights(hub)
    w1.push(hub, T0, g1)
    w2.push(hub, T0, g2)
    assert torch.allclose(weights(hub), before - 0.01 * 2 * (g1 + g2) / 2, atol=1e-7, rtol=0)


def test_zstd_pushes_are_applied_like_raw_ones() -> None:
    raw_hub, zstd_hub = make_hub(), make_hub()
    for hub, codec in ((raw_hub, "raw"), (zstd_hub, "zstd")):
        w1, w2 = start_training(hub)
        g1, g2 = grads(hub, 2, seed=3)
        w1.push(hub, T0, g1, codec=codec)
        w2.push(hub, T0, g2, codec=codec)
        assert hub.server.version == 1
    assert torch.equal(weights(raw_hub), weights(zstd_hub))


def test_deadline_closes_a_round_with_the_pushes_it_has() -> None:
    hub = make_hub(deadline_floor_s=2.0, heartbeat_timeout_s=6.0)
    w1, w2 = start_training(hub, T0)
    before = weights(hub)
    g1 = grads(hub, 1, seed=11)[0]
    # a fast link (1 GB/s): the missing push would take no time on the wire
    assert isinstance(only(w1.push(hub, T0 + 0.1, g1, bandwidth=1e9)), Ack)
    assert hub.tick(T0 + 1.0) == [] and hub.server.version == 0  # before the deadline
    assert hub.tick(T0 + 1.999) == [] and hub.server.version == 0
    hub.drain_events()
    hub.tick(T0 + 2.11)
    assert hub.server.version == 1
    (event,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert event.contributors == 1 and event.complete is False
    # lr = base_lr * 1: a single gradient is not scaled up as if it were two
    assert torch.allclose(weights(hub), before - hub.config.lr * 1 * g1, atol=1e-7, rtol=0)
    # the silent worker's late gradient is now stale, and training goes on with both
    late = only(w2.push(hub, T0 + 2.2, grads(hub, 1)[0], version=0))
    assert reject_code(late) is RejectCode.STALE and late.version == 1
    full_round(hub, [w1, w2], T0 + 2.3)
    assert hub.server.version == 2


def test_deadline_waits_for_a_push_still_on_a_slow_wire() -> None:
    """The missing push is as large as the first; at 10 kB/s it needs 8.7 s to arrive."""
    hub = make_hub(deadline_floor_s=2.0, heartbeat_timeout_s=60.0)
    w1, w2 = start_training(hub, T0)
    w1.push(hub, T0 + 0.1, grads(hub, 1)[0], bandwidth=1e4)
    transfer = w1.last_push_bytes / 1e4  # the payload, give or take its header
    assert hub.tick(T0 + 0.1 + 2.0 + transfer - 0.1) == [] and hub.server.version == 0
    hub.tick(T0 + 0.1 + 2.0 + transfer + 0.1)
    assert hub.server.version == 1


def test_deadline_adapts_to_the_slowest_expected_worker() -> None:
    policy = DeadlinePolicy(floor_s=2.0, factor=4.0, history=3)
    assert policy.deadline(10.0, 10.5, {1, 2}) == 12.5  # floor after the first push
    assert policy.deadline(10.0, 10.0, {1, 2}) == 12.0  # no history: the floor
    assert policy.deadline(10.0, 10.5, {1, 2}, transfer_s=3.0) == 15.5  # a push on the wire
    for latency in (1.0, 3.0, 0.1):
        policy.observe(1, latency)
    assert policy.wait_s({1}) == 4.0  # 4 x median(1, 3, 0.1)
    policy.observe(1, 2.0)  # history of 3: (3, 0.1, 2)
    assert policy.wait_s({1}) == 8.0
    policy.observe(2, 0.01)
    assert policy.wait_s({2}) == 2.0  # never below the floor
    assert policy.wait_s({1, 2}) == 8.0  # the slowest expected worker decides
    policy.forget(1)
    assert policy.wait_s({1, 2}) == 2.0


def test_round_events_and_done_after_the_last_round() -> None:
    hub = make_hub(rounds=3)
    w1, w2 = start_training(hub)
    snapshot_bytes = len(hub.server.payload(-1).data)
    hub.drain_events()
    for r in range(3):
        pushes = [w.push(hub, T0 + r, g, loss=1.0 + r, samples=8)
                  for w, g in zip((w1, w2), grads(hub, 2, seed=r), strict=True)]
        assert all(len(p) >= 1 for p in pushes)
        events = hub.drain_events()
        rounds = [e for e in events if isinstance(e, RoundClosed)]
        assert len(rounds) == 1
        e = rounds[0]
        assert (e.round, e.version, e.contributors) == (r + 1, r + 1, 2)
        assert e.loss == pytest.approx(1.0 + r) and e.rejected == 0 and e.complete
        assert e.bytes_in == w1.last_push_bytes + w2.last_push_bytes > 2 * 4 * 21_840
        assert e.bytes_out > (2 * snapshot_bytes if r == 0 else 0)  # round 1 sent 2 MODELs
        assert e.compute_s == pytest.approx(0.005)  # the slowest worker's compute_ms
        assert [w.pushed for w in e.workers] == [r + 1, r + 1]
    assert hub.done and hub.server.version == 3
    assert StateChanged("done") in events
    # from now on every request from a member is answered DONE
    for reply in (w1.pull(hub, T0 + 9), w2.ping(hub, T0 + 9),
                  w1.push(hub, T0 + 9, grads(hub, 1)[0], version=3)):
        msg = only(reply)
        assert isinstance(msg, Done) and msg.version == 3
    assert hub.all_told()
    weights_at_done = weights(hub)
    assert hub.tick(T0 + 20) == [] and torch.equal(weights(hub), weights_at_done)


def test_parked_pulls_are_told_done_when_the_last_round_closes() -> None:
    hub = make_hub(rounds=1)
    w1, w2 = start_training(hub)
    assert w1.pull(hub, T0, after=0) == []
    out = full_round(hub, [w1, w2], T0 + 0.5)
    assert any(o.peer == b"w1" and isinstance(o.msg, Done) for o in out)
    assert not hub.all_told()  # w2 has not asked since
    assert isinstance(only(w2.ping(hub, T0 + 1)), Done)
    assert hub.all_told()


def test_ping_answers_version_and_state() -> None:
    hub = make_hub()
    w1 = admit(hub, b"w1", T0)
    pong = only(w1.ping(hub, T0 + 1))
    assert isinstance(pong, Pong) and (pong.version, pong.state) == (0, "waiting")
    workers = [w1, admit(hub, b"w2", T0)]
    for w in workers:
        w.pull(hub, T0 + 1)
    full_round(hub, workers, T0 + 2)
    pong = only(workers[1].ping(hub, T0 + 3))
    assert (pong.version, pong.state) == (1, "training")


@pytest.mark.parametrize("compute_s", [
    0.5,
    2.5,  # slower than the deadline floor: both must still count
])
def test_steady_workers_all_count_whatever_their_speed(compute_s: float) -> None:
    hub = make_hub(rounds=8, deadline_floor_s=2.0, heartbeat_timeout_s=60.0)
    w1, w2 = start_training(hub, T0)
    now = T0
    for r in range(8):
        version = hub.server.version
        g1, g2 = grads(hub, 2, seed=r)
        w1.push(hub, now + compute_s, g1, version=version)
        w2.push(hub, now + compute_s + 0.1, g2, version=version)  # 0.1 s behind, every time
        now += compute_s + 0.2
        hub.tick(now)
    contributors = [e.contributors for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert len(contributors) == 8
    assert contributors[-4:] == [2, 2, 2, 2]  # after a few rounds at most, both count


@pytest.mark.parametrize("changes", [{"compute_ms": float("inf")}, {"loss": 1e308},
                                     {"loss": -1e308}], ids=["compute_ms", "loss", "-loss"])
def test_a_pushed_value_never_makes_the_round_event_infinite(changes: dict) -> None:
    hub = make_hub()
    w1, w2 = start_training(hub)
    g1, g2 = grads(hub, 2)
    reply = only(w1.push(hub, T0 + 0.1, g1, **changes))
    if not isinstance(reply, Ack):  # refusing it is fine too
        assert reject_code(reply) in (RejectCode.NOT_FINITE, RejectCode.MALFORMED)
        assert isinstance(only(w1.push(hub, T0 + 0.1, g1)), Ack)
    w2.push(hub, T0 + 0.2, g2)
    (event,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert math.isfinite(event.loss) and math.isfinite(event.compute_s)


def test_an_empty_round_never_closes_at_its_deadline() -> None:
    hub = make_hub(deadline_floor_s=2.0, heartbeat_timeout_s=1000.0)
    w1, w2 = start_training(hub, T0)
    for t in (3.0, 50.0, 500.0):
        assert hub.tick(T0 + t) == [] and hub.server.version == 0
    assert not [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
