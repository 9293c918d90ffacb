"""Shards and batches are pure functions of the seed: disjoint, covering, cycling by epoch."""

from __future__ import annotations

import pytest
import torch

from computeshare_desktop.sampling import batch_indices, batches_per_epoch, shard_indices


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


def test_batches_are_deterministic_and_shard_specific() -> None:
    a = batch_indices(2000, 32, seed=0, shard=0, version=17)
    assert torch.equal(a, batch_indices(2000, 32, seed=0, shard=0, version=17))
    assert not torch.equal(a, batch_indices(2000, 32, seed=0, shard=1, version=17))
    assert not torch.equal(a, batch_indices(2000, 32, seed=1, shard=0, version=17))
    assert not torch.equal(a, batch_indices(2000, 32, seed=0, shard=0, version=18))


def test_batches_cycle_through_epochs_with_new_permutations() -> None:
    shard_size, batch = 10, 3  # 3 full batches per epoch; 1 sample left out each epoch
    per_epoch = batches_per_epoch(shard_size, batch)
    assert per_epoch == 3
    epochs = []
    for epoch in range(50):
        batches = [batch_indices(shard_size, batch, 0, 0, epoch * per_epoch + k)
                   for k in range(per_epoch)]
        assert all(len(b) == batch for b in batches)
        flat = torch.cat(batches).tolist()
        assert len(set(flat)) == 9 and all(0 <= i < shard_size for i in flat)  # no repeats
        epochs.append(tuple(flat))
    assert len(set(epochs)) == 50  # each epoch its own order
    left_out = {(set(range(10)) - set(e)).pop() for e in epochs}
    assert len(left_out) > 3  # the dropped sample changes from epoch to epoch


@pytest.mark.parametrize("version", [0, 1, 2, 3, 1_000, 123_457, 2**40])
def test_versions_far_beyond_one_epoch_have_full_batches(version: int) -> None:
    b = batch_indices(7, 2, seed=3, shard=1, version=version)
    assert len(b) == 2 and len(set(b.tolist())) == 2 and all(0 <= i < 7 for i in b.tolist())


def test_batch_larger_than_the_shard_uses_the_whole_shard() -> None:
    assert batches_per_epoch(5, 32) == 1
    b0, b1 = (batch_indices(5, 32, 0, 0, v) for v in (0, 1))
    assert sorted(b0.tolist()) == sorted(b1.tolist()) == [0, 1, 2, 3, 4]
    assert b0.tolist() != b1.tolist()
