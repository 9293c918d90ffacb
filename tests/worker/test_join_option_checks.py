"""join's --cache-size is checked when the command line is read, before any hub is asked."""

from __future__ import annotations

import logging

import pytest
from helpers.cli import run_cli

from computeshare_desktop.cli.fast import precheck
from computeshare_desktop.graph import loader


@pytest.mark.parametrize("size", ["12XB", "-5", "=-5", "=lots"])
def test_a_bad_cache_size_exits_2_at_once(size: str, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    argv = (["join", "127.0.0.1:1", f"--cache-size{size}"] if size.startswith("=")
            else ["join", "127.0.0.1:1", "--cache-size", size])
    assert precheck(argv) is None  # no hub asked: nothing listens on port 1
    assert run_cli(argv) == 2
    assert "--cache-size takes a size" in capsys.readouterr().err


def test_torch_rebuild_notes_go_to_the_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    serde = logging.getLogger(loader.SERDE_LOGGER)
    with caplog.at_level(logging.DEBUG):
        with loader._torch_notes_to_debug():
            serde.warning("Symbol s83 did not appear in the graph that was deserialized")
    [record] = [r for r in caplog.records if "s83" in r.getMessage()]
    assert record.levelno == logging.DEBUG and record.name == loader.__name__
    assert not serde.filters
