"""Shards and sample streams are pure functions of the seed: disjoint, covering, by epoch."""

from __future__ import annotations

import pytest
import torch

from computeshare_desktop.sampling import epoch_order, shard_indices, stream_positions


@pytest.mark.parametrize("n,shards,seed", [(4000, 2, 0), (4000, 3, 1), (10, 4, 5), (3, 5, 0),
                                           (0, 2, 0), (60_000, 7, 123)])
def test_shards_are_disjoint_and_cover(n: int, shards: int, seed: int) -> None:
    parts = [shard_indices(n, shards, s, seed) for s in range(shards)]
    every = torch.cat(parts)
    assert every.dtype == torch.int64
    assert sorted(every.tolist()) == list(range(n))
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == n


def test_shards_depend_on_the_seed_only() -> None:
    a = shard_indices(4000, 2, 0, seed=0)
    assert torch.equal(a, shard_indices(4000, 2, 0, seed=0))
    assert not torch.equal(a, shard_indices(4000, 2, 0, seed=1))
    torch.manual_seed(999)  # the global generator plays no part
    assert torch.equal(a, shard_indices(4000, 2, 0, seed=0))
    assert a.tolist() != sorted(a.tolist())  # shuffled, not a contiguous block


@pytest.mark.parametrize("shard", [-1, 2])
def test_shard_out_of_range(shard: int) -> None:
    with pytest.raises(ValueError):
        shard_indices(10, 2, shard, 0)


def test_streams_are_deterministic_and_shard_specific() -> None:
    a = stream_positions(2000, seed=0, shard=0, start=544, count=32)
    assert torch.equal(a, stream_positions(2000, seed=0, shard=0, start=544, count=32))
    assert not torch.equal(a, stream_positions(2000, seed=0, shard=1, start=544, count=32))
    assert not torch.equal(a, stream_positions(2000, seed=1, shard=0, start=544, count=32))
    assert not torch.equal(a, stream_positions(2000, seed=0, shard=0, start=576, count=32))


def test_each_epoch_reads_every_sample_once_in_its_own_order() -> None:
    size, epochs = 10, 30
    stream = stream_positions(size, 0, 0, 0, size * epochs).view(epochs, size)
    for row in stream.tolist():
        assert sorted(row) == list(range(size))
    assert len({tuple(r) for r in stream.tolist()}) == epochs


@pytest.mark.parametrize("cuts", [[3, 3, 3, 3, 3, 3, 7, 1, 10, 30], [1] * 25, [25], [9, 16]])
def test_any_split_into_batches_reads_the_same_stream(cuts: list[int]) -> None:
    """Batches of any size (work sized to each device) read the stream without gaps."""
    whole = stream_positions(7, 3, 1, 4, sum(cuts))
    parts, start = [], 4
    for c in cuts:
        parts.append(stream_positions(7, 3, 1, start, c))
        start += c
    assert torch.equal(torch.cat(parts), whole)


@pytest.mark.parametrize("start", [0, 6, 7, 1_000, 123_457, 2**40])
def test_positions_far_beyond_one_epoch(start: int) -> None:
    b = stream_positions(7, seed=3, shard=1, start=start, count=2)
    assert len(b) == 2 and all(0 <= i < 7 for i in b.tolist())
    epoch, offset = divmod(start, 7)
    assert b[0] == epoch_order(7, 3, 1, epoch)[offset]


@pytest.mark.parametrize("args", [(0, 0, 0, 0, 1), (5, 0, 0, -1, 1), (5, 0, 0, 0, -1)])
def test_bad_ranges_are_value_errors(args: tuple[int, ...]) -> None:
    with pytest.raises(ValueError):
        stream_positions(*args)


def test_empty_count_is_empty() -> None:
    assert stream_positions(5, 0, 0, 3, 0).numel() == 0
