"""Which samples each shard holds and which of them a worker trains on in each round.

Both are pure functions of the session seed, so the hub, every worker and the reference
single-process training in the tests agree on them without talking. Each shard is read as
an endless *stream*: epoch ``e`` of the shard is its own seeded permutation, and the epochs
follow one another. The hub keeps a cursor per shard and hands each round's work out as
``(start, count)`` in that stream, so batches of any size, local steps, and a worker that
replaces a dead one on the same shard all read every sample once per epoch, in order.
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


def epoch_order(shard_size: int, seed: int, shard: int, epoch: int) -> torch.Tensor:
    """The permutation of a shard's positions used in ``epoch``."""
    return torch.randperm(shard_size, generator=_generator(seed, shard, epoch))


def stream_positions(shard_size: int, seed: int, shard: int, start: int,
                     count: int) -> torch.Tensor:
    """Positions within the shard of samples ``[start, start + count)`` of its stream.

    Raises:
        ValueError: an empty shard, or a negative start or count.
    """
    if shard_size <= 0 or start < 0 or count < 0:
        raise ValueError(f"bad stream range: size {shard_size}, start {start}, count {count}")
    parts, pos, end = [], start, start + count
    while pos < end:
        epoch, offset = divmod(pos, shard_size)
        take = min(end - pos, shard_size - offset)
        parts.append(epoch_order(shard_size, seed, shard, epoch)[offset:offset + take])
        pos += take
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64)
