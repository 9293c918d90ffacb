"""Every command's --help prints (argparse %-formats help texts: a stray % breaks it)."""

from __future__ import annotations

import pytest

from computeshare_desktop.cli.main import build_parser


@pytest.mark.parametrize("command", ["host", "join", "demo", "sessions", "evaluate", "predict",
                                     "self-test"])
def test_help_prints(command, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([command, "--help"])
    assert done.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_demo_starts_its_workers_with_this_command(monkeypatch):
    """A frozen bundle's workers are the ``computeshare`` executable itself (it has no
    ``-m``); from a venv, this Python with the CLI module."""
    import sys

    from computeshare_desktop.cli.commands import this_command

    assert this_command() == [sys.executable, "-m", "computeshare_desktop.cli"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/ComputeShare/computeshare")
    assert this_command() == ["/opt/ComputeShare/computeshare"]
