"""Shards for the disk cache's tests: a Welcome that names one, chunks of images, and a cache
entry holding some."""

from __future__ import annotations

from typing import Any

import msgspec
import torch

from computeshare_desktop.protocol import MsgType
from computeshare_desktop.worker.shard_cache import ShardCache, ShardEntry
from computeshare_desktop.worker.shard_reuse import Fresh
from helpers.protocol import EXAMPLES


def welcome(shard: int = 0, size: int = 10, data_hash: str = "ab" * 32) -> Any:
    """The hub's Welcome for ``shard`` of 4, of ``size`` 1×28×28 images."""
    return msgspec.structs.replace(EXAMPLES[MsgType.WELCOME], shard=shard, num_shards=4,
                                   shard_size=size, data_hash=data_hash, channels=1,
                                   height=28, width=28, mean=[0.5], std=[0.5])


def chunk(offset: int, n: int, seed: int = 0) -> Fresh:
    """``n`` random images and labels from ``offset`` on, as a download brings them."""
    g = torch.Generator().manual_seed(seed + offset)
    return Fresh(offset, torch.randint(0, 256, (n, 1, 28, 28), dtype=torch.uint8, generator=g),
                 torch.randint(0, 10, (n,), generator=g))


def stored(cache: ShardCache, w: Any, *parts: Fresh) -> ShardEntry:
    """``w``'s entry, opened (it held nothing), with ``parts`` written into it."""
    entry = cache.entry(w)
    assert entry is not None and entry.open().chunks == ()
    for part in parts:
        entry.write(part)
    return entry
