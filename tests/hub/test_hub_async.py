"""Async mode in the hub core: each update is applied on arrival, within a staleness bound,
with a learning rate that shrinks for stale updates; a stuck worker loses its shard."""

from __future__ import annotations

import pytest
import torch
from helpers.hub import T0, grads, make_hub, only, reject_code, start_training, weights

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.events import RoundClosed, WorkerLeft
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.hub.asynchronous import staleness_scale
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.messages import Ack, Model


def test_each_update_is_one_step_applied_on_arrival() -> None:
    hub = make_hub(updates="async", momentum=0.0, rounds=10)
    a, b = start_training(hub)
    g = grads(hub, 1)[0]
    before = weights(hub)
    reply = only(a.push(hub, T0 + 1, g, samples=8))
    assert isinstance(reply, Ack) and reply.version == 1  # b has not pushed: nobody waits
    # one worker's batch: lr * samples / batch_size, at full rate (staleness 0)
    assert torch.allclose(weights(hub), before - hub.config.lr * g, atol=1e-6)
    rounds = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert [(e.version, e.staleness, e.contributors) for e in rounds] == [(1, 0, 1)]


def test_stale_updates_get_a_smaller_rate_and_past_the_bound_are_refused() -> None:
    hub = make_hub(updates="async", momentum=0.0, rounds=20, max_staleness=3)
    a, b = start_training(hub)  # both downloaded version 0
    g = grads(hub, 5, seed=1)
    for version in range(3):  # b pushes three times: version 3
        assert isinstance(only(b.push(hub, T0 + 1, g[version], version=version)), Ack)
        b.pull(hub, T0 + 1, after=version)
    assert hub.server.version == 3
    before = weights(hub)
    assert isinstance(only(a.push(hub, T0 + 2, g[3], version=0)), Ack)  # 3 versions old
    scale = staleness_scale(3, workers=2)
    assert scale == 0.5
    assert torch.allclose(weights(hub), before - scale * hub.config.lr * g[3], atol=1e-6)

    a_pull = only(a.pull(hub, T0 + 2, after=0))
    assert isinstance(a_pull, Model) and a_pull.version == 4
    have = only(b.pull(hub, T0 + 2, after=2)).version
    while hub.server.version < 8:  # b moves on: a's version 4 becomes 4 versions old
        assert isinstance(only(b.push(hub, T0 + 3, g[0], version=have)), Ack)
        have = only(b.pull(hub, T0 + 3, after=have)).version
    before = weights(hub)
    refused = only(a.push(hub, T0 + 4, g[4], version=4))
    assert reject_code(refused) is RejectCode.STALE and "bound is 3" in refused.detail
    assert torch.equal(weights(hub), before) and hub.server.version == 8
    summary = hub.schedule.staleness_summary()
    assert summary == {"counts": {"0": 7, "3": 1}, "refused": 1, "bound": 3}


def test_a_resent_update_is_a_duplicate_and_a_future_one_is_refused() -> None:
    hub = make_hub(updates="async", rounds=10)
    a, _ = start_training(hub)
    g = grads(hub, 1)[0]
    assert isinstance(only(a.push(hub, T0 + 1, g, version=0)), Ack)
    assert reject_code(only(a.push(hub, T0 + 1, g, version=0))) is RejectCode.DUPLICATE
    assert reject_code(only(a.push(hub, T0 + 1, g, version=5))) is RejectCode.BAD_VERSION
    assert hub.server.version == 1


def test_the_session_ends_after_its_rounds_of_single_updates() -> None:
    hub = make_hub(updates="async", rounds=4)
    a, b = start_training(hub)
    for version in range(4):
        worker = (a, b)[version % 2]
        worker.pull(hub, T0 + 1, after=version - 1)
        assert isinstance(only(worker.push(hub, T0 + 1, grads(hub, 1)[0])), Ack)
    assert hub.done and hub.server.version == 4
    histogram = [e for e in hub.drain_events()
                 if isinstance(e, RoundClosed) and e.staleness_histogram is not None]
    assert histogram and sum(histogram[-1].staleness_histogram["counts"].values()) == 4


def test_a_worker_that_pushes_nothing_loses_its_shard_but_holds_nobody_up() -> None:
    hub = make_hub(updates="async", rounds=100, deadline_cap_s=1.0, max_missed=2,
                   heartbeat_timeout_s=60)
    a, b = start_training(hub)
    for step in range(3):  # a trains on; b heartbeats but never pushes
        a.pull(hub, T0 + step, after=step - 1)
        assert isinstance(only(a.push(hub, T0 + step, grads(hub, 1)[0])), Ack)
        b.ping(hub, T0 + step)
        hub.tick(T0 + step)
    assert [e for e in hub.drain_events() if isinstance(e, WorkerLeft)] == []
    b.ping(hub, T0 + 2.5)
    hub.tick(T0 + 2.5)  # 2.5 s > max_missed * cap without an update
    left = [e for e in hub.drain_events() if isinstance(e, WorkerLeft)]
    assert [(e.worker.id, e.reason) for e in left] == [(b.welcome.worker_id, "stuck")]
    assert hub.members.free_shard() == b.welcome.shard


@pytest.mark.parametrize("settings,message", [
    ({"local_steps": 4}, "local steps"), ({"preset": "slow"}, "lan or wifi"),
    ({"preset": "auto"}, "lan or wifi"), ({"max_staleness": -1}, "staleness"),
    ({"updates": "eventually"}, "updates must be")])
def test_async_settings_that_cannot_work_are_refused(settings, message) -> None:
    with pytest.raises(ConfigError, match=message):
        HubConfig(**{"updates": "async", **settings})


def test_staleness_scale_is_full_within_a_round_and_shrinks_after() -> None:
    assert [staleness_scale(s, 4) for s in (0, 3, 4, 7, 15)] == [1.0, 1.0, 0.8, 0.5, 0.25]
