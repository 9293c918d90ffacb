"""Each round's bytes split by purpose: data (shard samples), model (the model replies) and
update (the pushes), counted whole as they crossed; metrics.jsonl records all three."""

from __future__ import annotations

from helpers.hub import T0, Worker, admit, grads, make_hub

from computeshare_desktop.codec import get_codec
from computeshare_desktop.events import RoundClosed
from computeshare_desktop.hub import HubCore
from computeshare_desktop.hub.session import ROUND_RECORD
from computeshare_desktop.protocol import decode, encode
from computeshare_desktop.protocol.messages import Model, Pull, Push, Shard, ShardData


def sent(hub: HubCore, w: Worker, msg: object, now: float,
         frames: list[bytes] | None = None) -> tuple[int, dict[type, int]]:
    """Send ``msg``; its size and the size of the replies it released, by message type."""
    request = encode(msg, frames or [])
    sizes: dict[type, int] = {}
    for reply in hub.handle(w.peer, request, now, w.key):
        kind = type(decode(reply.frames)[0])
        sizes[kind] = sizes.get(kind, 0) + sum(len(f) for f in reply.frames)
    return sum(len(f) for f in request), sizes


def download(hub: HubCore, w: Worker) -> int:
    """The whole shard in chunks of 500 samples: the bytes of the ShardData replies."""
    total = offset = 0
    while offset < w.welcome.shard_size:
        _, sizes = sent(hub, w, Shard(w.token, offset, 500), T0)
        total += sizes[ShardData]
        offset += 500
    return total


def push(hub: HubCore, w: Worker, now: float, grad: object, version: int | None = None) -> int:
    data = get_codec("raw").encode(grad)
    version = hub.server.version if version is None else version
    msg = Push(token=w.token, version=version, codec="raw", numel=hub.server.numel,
               loss=1.0, samples=8, steps=0, compute_ms=5.0, bandwidth=0.0)
    size, _ = sent(hub, w, msg, now, [data, b""])
    return size


def pull(hub: HubCore, w: Worker, now: float, after: int) -> int:
    _, sizes = sent(hub, w, Pull(w.token, after, 2000, hub.fingerprint), now)
    return sizes.get(Model, 0)


def test_first_round_carries_the_shards_and_later_rounds_no_data() -> None:
    hub = make_hub(workers=2, deadline_floor_s=100.0)
    workers = [admit(hub, b"w%d" % i, T0) for i in (1, 2)]
    data = sum(download(hub, w) for w in workers)  # before training, as a worker does
    model = sum(pull(hub, w, T0, -1) for w in workers)  # both ready: training starts
    g = grads(hub, 2)
    update = sum(push(hub, w, T0 + 0.1, x) for w, x in zip(workers, g, strict=True))
    (first,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert data > len(hub.train_set) * 28 * 28  # every training image once, and labels
    assert (first.data_bytes, first.model_bytes, first.update_bytes) == (data, model, update)
    model = sum(pull(hub, w, T0 + 1, 0) for w in workers)
    update = sum(push(hub, w, T0 + 1.1, x) for w, x in zip(workers, g, strict=True))
    model += pull(hub, workers[0], T0 + 1.2, 1)
    update += push(hub, workers[0], T0 + 1.3, g[0])
    update += push(hub, workers[0], T0 + 1.4, g[0])  # refused (duplicate): it moved still
    update += push(hub, workers[1], T0 + 1.5, g[1])
    second, third = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert third.rejected == 1
    assert second.data_bytes == 0 and third.data_bytes == 0
    assert second.model_bytes + third.model_bytes == model
    assert second.update_bytes + third.update_bytes == update
    assert second.model_bytes + second.update_bytes < second.bytes_in + second.bytes_out


def test_the_split_goes_into_metrics_round_records() -> None:
    assert {"data_bytes", "model_bytes", "update_bytes"} <= set(ROUND_RECORD)
    assert RoundClosed.__struct_fields__[-4:-1] == ("data_bytes", "model_bytes", "update_bytes")


def test_async_updates_each_carry_their_own_push() -> None:
    hub = make_hub(updates="async", momentum=0.0, rounds=10)
    workers = [admit(hub, b"w%d" % i, T0) for i in (1, 2)]
    data = download(hub, workers[0])
    model = sum(pull(hub, w, T0, -1) for w in workers)
    g = grads(hub, 2)
    sizes = [push(hub, w, T0 + 0.1 * (i + 1), x, version=0)  # both computed on version 0
             for i, (w, x) in enumerate(zip(workers, g, strict=True))]
    first, second = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert (first.data_bytes, first.model_bytes, first.update_bytes) == (data, model, sizes[0])
    assert (second.data_bytes, second.model_bytes, second.update_bytes) == (0, 0, sizes[1])
