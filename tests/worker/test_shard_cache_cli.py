"""``computeshare cache``: where the shard cache is and what it holds; ``--clear`` empties it
(the command line's main, in-process)."""

from __future__ import annotations

from typing import Any

import pytest

from computeshare_desktop.cli.main import main
from computeshare_desktop.worker.shard_cache import ShardCache, shard_cache_dir
from helpers.shards import chunk, stored, welcome


def test_cache_says_where_and_how_much_and_clear_empties_it(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path))
    root = shard_cache_dir()
    assert root == tmp_path / "cache" / "shards"
    cache = ShardCache(root, 10**6)
    for shard in (0, 1):
        stored(cache, welcome(shard), chunk(0, 10))
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert str(root) in out and "2 shards" in out
    assert main(["cache", "--clear"]) == 0
    assert "2 shards" in capsys.readouterr().out and cache.usage().entries == 0
    assert main(["cache"]) == 0 and "0 shards, 0.0 MB" in capsys.readouterr().out
