"""SHARD requests: chunks rebuild each shard exactly, shards are disjoint, ranges are checked."""

from __future__ import annotations

import pytest
import torch
from helpers.hub import T0, Worker, admit, make_hub, only, reject_code, send, train_set

from computeshare_desktop.hub import HubCore
from computeshare_desktop.hub.shards import MAX_SHARD_CHUNK_BYTES
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.messages import Shard, ShardData
from computeshare_desktop.protocol.tensors import frame_to_tensor
from computeshare_desktop.sampling import shard_indices

LIMIT = MAX_SHARD_CHUNK_BYTES // (28 * 28)  # images per chunk for 1x28x28 uint8 images


def fetch(hub: HubCore, w: Worker, offset: int, count: int) -> tuple[ShardData, torch.Tensor,
                                                                     torch.Tensor]:
    out = send(hub, w.peer, Shard(w.token, offset, count), T0)
    assert len(out) == 1
    msg, body = out[0].msg, out[0].body
    assert isinstance(msg, ShardData), msg
    n = msg.image_shape[0]
    images = frame_to_tensor(body[0], "uint8", msg.image_shape, MAX_SHARD_CHUNK_BYTES)
    labels = frame_to_tensor(body[1], "int64", [n], MAX_SHARD_CHUNK_BYTES)
    return msg, images, labels


def fetch_all(hub: HubCore, w: Worker, chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    images, labels, offset = [], [], 0
    while offset < w.welcome.shard_size:
        msg, im, lab = fetch(hub, w, offset, chunk)
        assert msg.offset == offset and msg.total == w.welcome.shard_size
        assert msg.image_shape == [len(lab), 1, 28, 28] and len(lab) > 0
        images.append(im)
        labels.append(lab)
        offset += len(lab)
    assert offset == w.welcome.shard_size
    return torch.cat(images), torch.cat(labels)


@pytest.fixture(scope="module")
def hub_and_workers() -> tuple[HubCore, list[Worker]]:
    hub = make_hub(workers=3, seed=7)
    return hub, [admit(hub, b"w%d" % i, T0) for i in range(3)]


def test_chunks_rebuild_each_shard_and_shards_partition_the_data(
        hub_and_workers: tuple[HubCore, list[Worker]]) -> None:
    hub, workers = hub_and_workers
    data = train_set()
    seen = []
    for w, chunk in zip(workers, (700, 1333, LIMIT), strict=True):
        images, labels = fetch_all(hub, w, chunk)
        idx = shard_indices(len(data), 3, w.welcome.shard, 7)
        assert len(labels) == len(idx) == w.welcome.shard_size
        assert torch.equal(images, data.images[idx]) and torch.equal(labels, data.labels[idx])
        seen.append(idx)
    every = torch.cat(seen)
    assert sorted(every.tolist()) == list(range(len(data)))  # disjoint and covering
    assert sorted(len(s) for s in seen) == [1333, 1333, 1334]


def test_last_chunk_is_cut_at_the_end(hub_and_workers: tuple[HubCore, list[Worker]]) -> None:
    hub, (w, *_) = hub_and_workers
    total = w.welcome.shard_size
    msg, images, labels = fetch(hub, w, total - 3, 100)
    assert (msg.offset, msg.total, msg.image_shape) == (total - 3, total, [3, 1, 28, 28])
    assert torch.equal(labels, fetch(hub, w, 0, total)[2][-3:])


@pytest.mark.parametrize("offset,count", [(-1, 10), (1333, 1), (1334, 10), (10_000, 10),
                                          (2**53, 1), (0, 0), (0, -1), (5, -(2**53))])
def test_out_of_range_requests_are_bad_range(hub_and_workers: tuple[HubCore, list[Worker]],
                                             offset: int, count: int) -> None:
    hub, workers = hub_and_workers
    w = min(workers, key=lambda x: x.welcome.shard_size)
    assert w.welcome.shard_size == 1333
    reply = only(send(hub, w.peer, Shard(w.token, offset, count), T0))
    assert reject_code(reply) is RejectCode.BAD_RANGE
    assert str(offset) in reply.detail and str(count) in reply.detail


@pytest.mark.parametrize("count", [100, 101, 2**53])
def test_a_huge_count_gets_a_reply_under_the_byte_cap(
        hub_and_workers: tuple[HubCore, list[Worker]], monkeypatch: pytest.MonkeyPatch,
        count: int) -> None:
    hub, (w, *_) = hub_and_workers
    monkeypatch.setattr(hub.shards, "chunk", 100)  # 100 images a chunk
    msg, images, labels = fetch(hub, w, 7, count)
    assert msg.image_shape == [100, 1, 28, 28] and len(labels) == 100
    expected = train_set().labels[shard_indices(4000, 3, w.welcome.shard, 7)][7:107]
    assert torch.equal(labels, expected)


def test_unknown_token_cannot_read_a_shard(hub_and_workers: tuple[HubCore, list[Worker]]) -> None:
    hub, workers = hub_and_workers
    # from a paired key: the token is what is unknown
    reply = only(send(hub, b"x", Shard("00" * 16, 0, 10), T0, key=workers[0].key))
    assert reject_code(reply) is RejectCode.UNKNOWN_WORKER
    # from a key that never paired: refused before the token is even looked at
    reply = only(send(hub, b"x", Shard(workers[0].token, 0, 10), T0))
    assert reject_code(reply) is RejectCode.NOT_PAIRED
