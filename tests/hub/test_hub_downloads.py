"""Model downloads as deltas: every worker's copy stays bitwise equal to the hub's published
weights across joins, leaves, missed versions and resyncs; one encoding per version is
shared by every download; lossy deltas carry what they drop into later versions."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from helpers.hub import T0, Worker, admit, grads, make_hub, only, send, start_training

from computeshare_desktop.codec import get_codec, make_codec
from computeshare_desktop.codec.delta import FULL, weights_check
from computeshare_desktop.hub import HubCore
from computeshare_desktop.hub.trainer import Publisher
from computeshare_desktop.protocol.messages import Bye, Model
from computeshare_desktop.worker.replica import Drift, Replica


def model_of(outs: list[Any], peer: bytes) -> Any:
    (o,) = [o for o in outs if o.peer == peer and isinstance(o.msg, Model)]
    return o


def sync(hub: HubCore, w: Worker, replica: Replica, now: float) -> Model:
    """Pull what this replica lacks and apply it; the hub's Model header."""
    o = model_of(w.pull(hub, now, after=replica.version), w.peer)
    replica.apply(o.msg, o.body[0])
    return o.msg


def equal_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a.view(torch.int32), b.view(torch.int32))


def round_of_pushes(hub: HubCore, workers: list[Worker], now: float, seed: int) -> None:
    for w, g in zip(workers, grads(hub, len(workers), seed=seed), strict=True):
        w.push(hub, now, g)


@pytest.mark.parametrize("codec", ["zstd", "raw", "int8", "topk", "fp16", "bf16"])
def test_copies_stay_bitwise_equal_across_joins_leaves_and_resyncs(codec: str) -> None:
    hub = make_hub(codec=codec, rounds=40, workers=2)
    w1, w2 = start_training(hub)
    r1, r2 = Replica(hub.server.numel), Replica(hub.server.numel)
    now = T0
    for version in range(12):
        now += 0.1
        if version == 8:  # a bit of w1's copy flipped: the check catches it...
            with pytest.raises(Drift):
                sync(hub, w1, r1, now)
            assert r1.version == -1  # ... the copy is forgotten, and the next pull resyncs
        for w, r in ((w1, r1), (w2, r2)):
            msg = sync(hub, w, r, now)
            assert msg.version == version
            resync = version == 0 or (version == 8 and w is w1)
            assert msg.base == (FULL if resync else version - 1)  # deltas, but to start
            assert equal_bits(r.weights, hub.server.published.weights)
        if version == 4:  # w2 leaves; a newcomer takes its shard and starts from a snapshot
            send(hub, w2.peer, Bye(w2.token), now)
            w2, r2 = admit(hub, b"w3", now), Replica(hub.server.numel)
            assert sync(hub, w2, r2, now).base == FULL
        if version == 7:
            r1.weights.view(torch.int32)[123] ^= 1
        round_of_pushes(hub, [w1, w2], now, seed=version)
    if get_codec(codec).lossless:  # lossless: what workers hold is the hub's model itself
        assert equal_bits(hub.server.published.weights, hub.server.flat())


def test_a_worker_that_missed_versions_gets_the_whole_model() -> None:
    hub = make_hub(rounds=10)
    w1, w2 = start_training(hub)
    r1 = Replica(hub.server.numel)
    sync(hub, w1, r1, T0)
    for seed in range(3):
        round_of_pushes(hub, [w1, w2], T0 + 0.1, seed)
    msg = sync(hub, w1, r1, T0 + 0.2)  # holds 0, the hub is at 3
    assert (msg.version, msg.base) == (3, FULL)
    assert equal_bits(r1.weights, hub.server.published.weights)


def test_a_delta_for_another_base_is_drift() -> None:
    hub = make_hub(rounds=10)
    w1, w2 = start_training(hub)
    r1 = Replica(hub.server.numel)
    sync(hub, w1, r1, T0)
    round_of_pushes(hub, [w1, w2], T0, 0)
    o = model_of(w1.pull(hub, T0, after=0), w1.peer)
    r1.version = 5  # pretend to hold another version
    with pytest.raises(Drift):
        r1.apply(o.msg, o.body[0])


def test_each_version_is_encoded_once_and_shared_by_every_download() -> None:
    hub = make_hub(workers=3, rounds=5, codec="int8")
    workers = start_training(hub)
    calls = []
    codec = hub.server.published.codec
    real = codec.encode
    codec.encode = lambda flat: calls.append(1) or real(flat)  # type: ignore[method-assign]
    try:
        for w in workers:  # parked until the round closes
            assert w.pull(hub, T0, after=0) == []
        outs = []
        for w, g in zip(workers, grads(hub, 3), strict=True):
            outs += w.push(hub, T0 + 0.1, g)
    finally:
        codec.encode = real  # type: ignore[method-assign]
    models = [o for o in outs if isinstance(o.msg, Model)]
    assert len(models) == 3 and len(calls) == 1  # one encoding, three downloads
    replies = hub.server.payload(0)
    assert all(bytes(o.body[0]) == replies.data for o in models)


def test_lossless_deltas_are_smaller_than_whole_models() -> None:
    hub = make_hub(rounds=10, lr=0.001)
    w1, w2 = start_training(hub)
    round_of_pushes(hub, [w1, w2], T0, 0)
    delta, whole = hub.server.payload(0), hub.server.payload(-1)
    assert (delta.base, whole.base) == (0, FULL)
    assert len(delta.data) < 0.8 * len(whole.data)


def test_lossy_deltas_feed_back_what_they_dropped() -> None:
    """Publishing the same target again and again converges on it: nothing is lost."""
    gen = torch.Generator().manual_seed(0)
    start = torch.randn(5_000, generator=gen)
    target = start + 0.01 * torch.randn(5_000, generator=gen)
    for codec, fraction in (("topk", 0.05), ("int8", 0.0)):
        pub = Publisher(start, 0, make_codec(codec, topk=fraction or 0.01))
        errors = []
        for version in range(1, 31):
            pub.publish(target, version)
            errors.append(float((pub.weights - target).abs().max()))
        assert errors[-1] < 0.02 * errors[0], (codec, errors[0], errors[-1])
        assert pub.check == weights_check(pub.weights)


def test_whole_model_of_a_lossy_session_is_lossless() -> None:
    hub = make_hub(codec="topk", rounds=10)
    w1, w2 = start_training(hub)
    round_of_pushes(hub, [w1, w2], T0, 0)
    whole = hub.server.payload(-1)
    assert whole.codec == "zstd"
    got = get_codec("zstd").decode(whole.data, hub.server.numel)
    assert equal_bits(got, hub.server.published.weights)
    assert only(w1.pull(hub, T0, after=-1)).check == weights_check(got)
