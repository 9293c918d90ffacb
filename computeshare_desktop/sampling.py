"""Which samples each shard holds and which batch a worker trains on at each version.

Both are pure functions of the session seed, so the hub, every worker and the reference
single-process training in the tests agree on them without talking. A worker that replaces
a dead one on the same shard carries on with exactly the batches the dead one would have used.
"""

from __future__ import annotations

import numpy as np
import torch


def _generator(*words: int) -> torch.Generator:
    state = np.random.SeedSequence([int(w) for w in words]).generate_state(2, np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


def shard_indices(num_samples: int, num_shards: int, shard: int, seed: int) -> torch.Tensor:
    """Indices into the training set held by ``shard``; shards are disjoint and cover it."""
    if not 0 <= shard < num_shards:
        raise ValueError(f"shard {shard} out of range for {num_shards} shards")
    perm = torch.randperm(num_samples, generator=_generator(seed, 0x5A4D))
    return perm.tensor_split(num_shards)[shard].clone()


def batches_per_epoch(shard_size: int, batch_size: int) -> int:
    """Full batches in one pass over a shard (the incomplete last batch is dropped)."""
    return max(1, shard_size // batch_size)


def batch_indices(shard_size: int, batch_size: int, seed: int, shard: int,
                  version: int) -> torch.Tensor:
    """Positions within the shard of the batch trained on model ``version``.

    Epoch ``e = version // batches_per_epoch`` uses its own permutation, so any number of
    rounds works, however many passes over the data that takes.
    """
    per_epoch = batches_per_epoch(shard_size, batch_size)
    epoch, step = divmod(version, per_epoch)
    size = min(batch_size, shard_size)
    perm = torch.randperm(shard_size, generator=_generator(seed, shard, epoch))
    return perm[step * size:(step + 1) * size].clone()
