"""``computeshare cache``: where this machine's shard cache is and what it holds, and
``--clear`` to empty it (a worker keeps the samples hubs sent it there; see --cache-size)."""

from __future__ import annotations

import argparse

from ..errors import ExitCode
from ..worker.shard_cache import ShardCache, shard_cache_dir


def _size(nbytes: int) -> str:
    return f"{nbytes / 10**6:.1f} MB" if nbytes < 10**9 else f"{nbytes / 10**9:.2f} GB"


def cache(args: argparse.Namespace) -> int:
    """Print the cache's folder and size; empty it with --clear."""
    store = ShardCache(shard_cache_dir(), 0)
    if args.clear:
        held = store.clear()
        left = store.usage()
        print(f"shard cache emptied: {held.entries - left.entries} shards, "
              f"{_size(held.bytes - left.bytes)} freed ({held.folder})")
        if left.entries:
            print(f"{left.entries} shards are in use by a running worker and stay")
        return ExitCode.OK
    held = store.usage()
    print(f"shard cache: {held.folder}")
    print(f"{held.entries} shards, {_size(held.bytes)} (join's --cache-size caps it)")
    return ExitCode.OK
