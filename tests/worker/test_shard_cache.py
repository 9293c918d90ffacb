"""The worker's shard cache: kept on disk, checked, capped; a rejoin and the next session on
the same data fetch only what the worker lacks (real cores and driver, in-process hub)."""

from __future__ import annotations

import json
import logging
from typing import Any

import msgspec
import numpy as np
import pytest
import torch
from helpers.hub import make_hub, train_set
from helpers.clock import Clock
from worker_sim import DEVICE, HubConnector

from computeshare_desktop.data import ArrayDataset
from computeshare_desktop.data.digests import chunk_digest
from computeshare_desktop.errors import RejectedError
from computeshare_desktop.events import Event, Pushed, Rejoining
from computeshare_desktop.hub import HubCore
from computeshare_desktop.protocol.messages import Shard, ShardData
from computeshare_desktop.sampling import shard_indices
from computeshare_desktop.worker import WorkerCore, WorkerDriver, WorkerOptions
from computeshare_desktop.worker.shard_cache import (LABELS, MANIFEST, SAMPLES, ShardCache,
                                                      ShardEntry)
from computeshare_desktop.worker.shard_reuse import CachedShard, Fresh, Held
from testbed.fake_compute import FakeFactory
from helpers.shards import chunk, stored, welcome

SAMPLE = 28 * 28 + 8  # bytes of one image and its label on the wire


def held_of(cache: ShardCache, w: Any) -> tuple[Held, ...]:
    """What ``w``'s entry holds, checked."""
    entry = cache.entry(w)
    assert entry is not None
    return entry.open().chunks


def test_kept_chunks_come_back_checked_and_memory_mapped(tmp_path: Any) -> None:
    cache = ShardCache(tmp_path, 10**6)
    parts = [chunk(0, 6), chunk(6, 4)]
    stored(cache, welcome(), *parts)
    again = cache.entry(welcome())
    assert again is not None
    held = again.open().chunks
    assert [(h.offset, h.count) for h in held] == [(0, 6), (6, 4)]
    assert [h.digest for h in held] == [chunk_digest(p.images, p.labels) for p in parts]
    images, labels = again.tensors()
    assert torch.equal(images, torch.cat([p.images for p in parts]))
    assert torch.equal(labels, torch.cat([p.labels for p in parts]))
    assert cache.usage().entries == 1 and cache.usage().bytes >= 10 * SAMPLE


def test_a_tables_rows_are_kept_as_float32(tmp_path: Any) -> None:
    rows = msgspec.structs.replace(welcome(), data_kind="table", features=5, channels=1,
                                   height=1, width=1, mean=[0.0], std=[1.0])
    part = Fresh(0, torch.randn(10, 5, generator=torch.Generator().manual_seed(1)),
                 torch.arange(10))
    stored(ShardCache(tmp_path, 10**6), rows, part)
    again = ShardCache(tmp_path, 10**6).entry(rows)
    assert again is not None and again.open().chunks[0].count == 10
    features, labels = again.tensors()
    assert features.dtype == torch.float32 and torch.equal(features, part.images)
    assert torch.equal(labels, part.labels)
    # a manifest for another form of sample (images under the same key) holds nothing
    assert held_of(ShardCache(tmp_path, 10**6), welcome()) == ()


def test_a_changed_byte_drops_that_chunk_only(tmp_path: Any) -> None:
    cache = ShardCache(tmp_path, 10**6)
    entry = stored(cache, welcome(), chunk(0, 6), chunk(6, 4))
    with open(entry.folder / SAMPLES, "r+b") as fh:  # a byte of sample 7
        fh.seek(7 * 784 + 100)
        byte = fh.read(1)
        fh.seek(7 * 784 + 100)
        fh.write(bytes([byte[0] ^ 0xFF]))
    assert [(h.offset, h.count) for h in held_of(cache, welcome())] == [(0, 6)]
    kept = json.loads((entry.folder / MANIFEST).read_text(encoding="utf-8"))["chunks"]
    assert [c[:2] for c in kept] == [[0, 6]]


def test_a_mangled_manifest_holds_nothing_says_why_and_is_kept(
        tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    cache = ShardCache(tmp_path, 10**6)
    entry = stored(cache, welcome(), chunk(0, 10))
    cases = {"{": "truncated", "[]": "Expected `object`, got `array`",
             json.dumps({"format": 1, "chunks": [[0, "x", 1]]}):
             "Expected `int`, got `str` - at `$.chunks[0][1]`",
             json.dumps({"format": 1, "used": "noon"}): "at `$.used`"}
    for text, said in cases.items():
        (entry.folder / MANIFEST).write_text(text, encoding="utf-8")
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert held_of(cache, welcome()) == ()
        assert said in caplog.text
        assert text in [p.read_text(encoding="utf-8")
                        for p in entry.folder.glob(MANIFEST + ".damaged-*")]


def test_a_manifest_written_before_reads_as_it_did(tmp_path: Any) -> None:
    cache = ShardCache(tmp_path, 10**6)
    entry = stored(cache, welcome(), chunk(0, 4), chunk(4, 6))
    digests = [chunk_digest(c.images, c.labels) for c in (chunk(0, 4), chunk(4, 6))]
    (entry.folder / MANIFEST).write_text(json.dumps(  # as the first version wrote it
        {"format": 1, "count": 10, "dtype": "uint8", "sample": [1, 28, 28], "used": 5,
         "bytes": 10 * SAMPLE, "chunks": [[0, 4, digests[0]], [4, 6, digests[1]]]}),
        encoding="utf-8")
    assert [(h.offset, h.count) for h in held_of(cache, welcome())] == [(0, 4), (4, 6)]
    assert not list(entry.folder.glob("*.damaged-*"))


def test_the_cap_evicts_the_least_recently_used_and_a_shard_over_it_is_not_kept(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(1000, 2000))
    monkeypatch.setattr("computeshare_desktop.worker.shard_cache.time.time", lambda: next(clock))
    cache = ShardCache(tmp_path, 25 * SAMPLE)  # two entries of 10 samples fit, not three
    for shard in (0, 1):
        stored(cache, welcome(shard), chunk(0, 10))
    assert held_of(cache, welcome(0))  # shard 0: used last
    held_of(cache, welcome(2))  # evicts shard 1
    assert len(cache.entries()) == 2 and held_of(cache, welcome(0))
    assert held_of(cache, welcome(1)) == ()
    assert cache.entry(welcome(size=30)) is None  # 30 samples: over the cap alone
    assert cache.entry(welcome(data_hash="")) is None  # nothing to key it by
    assert ShardCache(tmp_path, 0).entry(welcome()) is None  # --cache-size 0: off
    assert ShardCache(tmp_path, 0).clear().entries == 2 and not list(tmp_path.iterdir())


def test_requests_offer_held_chunks_and_same_is_only_for_those() -> None:
    cached = CachedShard((Held(0, 5, "ab" * 32), Held(9, 3, "cd" * 32)))
    assert cached.request("t", 0, 20, 4096) == Shard("t", 0, 5, have="ab" * 32)
    assert cached.request("t", 5, 20, 4096) == Shard("t", 5, 4)  # up to the next held one
    assert cached.request("t", 12, 20, 4096) == Shard("t", 12, 8)
    same = ShardData(offset=0, total=20, image_shape=[5, 1, 28, 28], same=True)
    assert cached.same(same, [b"", b""], 0) == 5
    for msg, body, offset in ((same, [b"x", b""], 0),  # samples in a "same"
                              (msg_at(same, 5), [b"", b""], 5),  # nothing held there
                              (msg_at(same, 9), [b"", b""], 0),  # not the range asked
                              (ShardData(9, 20, [4, 1, 28, 28], same=True), [b"", b""], 9)):
        with pytest.raises(RejectedError):
            cached.same(msg, body, offset)


def msg_at(msg: ShardData, offset: int) -> ShardData:
    return msgspec.structs.replace(msg, offset=offset)


# ----------------------------------------------------------------- with the hub
def run(hub: HubCore, cache: ShardCache, *, forget_after: int = 0) -> tuple[int, FakeFactory]:
    """One worker's whole session against ``hub``: the bytes of samples the hub sent it
    (frames of its ShardData replies), and its factory (what it trained on). With
    ``forget_after``, the hub forgets the worker after that many pushes: it joins again."""
    moved = [0]
    serve = hub.shards.reply

    def counted(shard: int, msg: Any) -> Any:
        reply = serve(shard, msg)
        moved[0] += len(reply[1]) + len(reply[2])
        return reply

    hub.shards.reply = counted  # type: ignore[method-assign]
    clock = Clock()
    connector = HubConnector(hub, clock)
    opts = WorkerOptions(pin="123456", name="w1", heartbeat_s=3600.0)
    core = WorkerCore(opts, device=DEVICE, worker_key=connector.public_key)
    factory = FakeFactory(hub.server.numel)
    events: list[Event] = []

    def forget(event: Event) -> None:
        events.append(event)
        if forget_after and isinstance(event, Pushed) and sum(
                isinstance(e, Pushed) for e in events) == forget_after:
            clock.now += hub.config.heartbeat_timeout_s + 1  # silent that long: reaped
            hub.tick(clock.now)

    driver = WorkerDriver(core, connector, factory, opts, forget, clock=clock,
                          wait=clock.wait, cache=cache)
    clock.stop = driver.stop
    driver.run()
    assert not forget_after or any(isinstance(e, Rejoining) for e in events)
    return moved[0], factory


def shard_of(data: ArrayDataset, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    idx = shard_indices(len(data), 1, 0, seed)
    return data.images[idx], data.labels[idx]


def test_a_rejoin_and_the_next_session_fetch_nothing_and_a_changed_byte_one_chunk(
        tmp_path: Any) -> None:
    cache = ShardCache(tmp_path, 10**8)
    data = train_set()
    hub = make_hub(workers=1, rounds=4, seed=5)
    hub.shards.chunk = 1000  # 4 chunks
    moved, factory = run(hub, cache, forget_after=2)
    assert moved == len(data) * SAMPLE  # the first download; the rejoin's moved nothing
    assert len(factory.shard_sizes) == 2  # built twice (the join, the rejoin)
    (folder,) = tmp_path.iterdir()
    images, labels = shard_of(data, 5)
    on_disk = np.fromfile(folder / SAMPLES, dtype=np.uint8).reshape(-1, 1, 28, 28)
    assert torch.equal(torch.from_numpy(on_disk), images)
    assert torch.equal(torch.from_numpy(np.fromfile(folder / LABELS, dtype=np.int64)), labels)

    hub2 = make_hub(workers=1, rounds=2, seed=5)  # the next session on the same data
    hub2.shards.chunk = 1000
    assert run(hub2, cache)[0] == 0

    with open(folder / SAMPLES, "r+b") as fh:  # tampered: one chunk fails its check
        fh.seek(1500 * 784)
        fh.write(b"\xff\x00\xff")
    hub3 = make_hub(workers=1, rounds=2, seed=5)
    hub3.shards.chunk = 1000
    assert run(hub3, cache)[0] == 1000 * SAMPLE


def test_other_data_fetches_its_whole_shard(tmp_path: Any) -> None:
    cache = ShardCache(tmp_path, 10**8)
    data = train_set()
    assert run(make_hub(workers=1, rounds=1, seed=5), cache)[0] == len(data) * SAMPLE
    other = ArrayDataset(data.images.flip(0).contiguous(), data.labels.flip(0).contiguous(),
                         data.info)
    assert run(make_hub(workers=1, rounds=1, seed=5, data=other), cache)[0] == \
        len(data) * SAMPLE
    assert cache.usage().entries == 2


class Keeping(FakeFactory):
    """A FakeFactory that keeps what it was asked to train on."""

    def build(self, welcome: Any, images: torch.Tensor, labels: torch.Tensor) -> Any:
        self.trained_on = (images.clone(), labels.clone())
        return super().build(welcome, images, labels)


def test_a_full_disk_keeps_the_rest_of_the_shard_in_memory_and_training_goes_on(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    write = ShardEntry.write
    calls = [0]

    def full_after_one(self: ShardEntry, fresh: Fresh) -> None:
        calls[0] += 1
        if calls[0] > 1:
            raise OSError(28, "No space left on device")
        write(self, fresh)

    monkeypatch.setattr(ShardEntry, "write", full_after_one)
    hub = make_hub(workers=1, rounds=2, seed=5)
    hub.shards.chunk = 1000  # 4 chunks: the disk takes the first only
    cache = ShardCache(tmp_path, 10**8)
    factory = Keeping(hub.server.numel)
    clock = Clock()
    connector = HubConnector(hub, clock)
    opts = WorkerOptions(pin="123456", name="w1", heartbeat_s=3600.0)
    core = WorkerCore(opts, device=DEVICE, worker_key=connector.public_key)
    driver = WorkerDriver(core, connector, factory, opts, lambda event: None, clock=clock,
                          wait=clock.wait, cache=cache)
    clock.stop = driver.stop
    result = driver.run()
    assert calls[0] == 2 and len(factory.built) == 1  # no write tried after the refusal
    images, labels = shard_of(train_set(), 5)
    assert torch.equal(factory.trained_on[0], images)  # the whole shard, in order
    assert torch.equal(factory.trained_on[1], labels)
    assert result.pushed == 2
    (folder,) = tmp_path.iterdir()  # what the disk took, listed
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    assert [count for _, count, _ in manifest["chunks"]] == [1000]
