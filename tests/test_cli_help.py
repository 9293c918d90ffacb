"""Every command's --help prints (argparse %-formats help texts: a stray % breaks it)."""

from __future__ import annotations

import pytest

from computeshare_desktop.cli.main import build_parser


@pytest.mark.parametrize("command", ["host", "join", "demo", "sessions", "evaluate", "self-test"])
def test_help_prints(command, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([command, "--help"])
    assert done.value.code == 0
    assert "usage:" in capsys.readouterr().out
