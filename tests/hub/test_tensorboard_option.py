"""--tensorboard on host and demo: read from the command line into the plan; without the
tensorboard package it is a usage error (exit 2) that says what to install, before any
session opens."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers.cli import run_cli

from computeshare_desktop.app_options import AppConfig
from computeshare_desktop.cli import commands
from computeshare_desktop.cli.main import build_parser
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.hub.tensorboard_log import INSTALL, missing
from computeshare_desktop.service.options import HostOptions, host_plan


@pytest.fixture
def no_tensorboard(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import tensorboard`` fails, as where the extra is not installed."""
    monkeypatch.setitem(sys.modules, "tensorboard", None)


@pytest.mark.parametrize("command", ["host", "demo"])
def test_the_flag_reaches_the_plan(command: str, tmp_path: Path) -> None:
    out = ["--out", str(tmp_path / "run")]
    for argv, wanted in (([command, *out], False), ([command, "--tensorboard", *out], True)):
        args = build_parser().parse_args(argv)
        assert commands.host_options(args).tensorboard is wanted
        assert commands._host_plan(args).options.tensorboard is wanted
    assert host_plan(HostOptions(tensorboard=True, out_dir=str(tmp_path / "r")),
                     AppConfig()).options.tensorboard


def test_without_the_package_the_flag_says_how_to_install_it(
        no_tensorboard: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert INSTALL in missing()
    out = tmp_path / "run"
    assert run_cli(["host", "--tensorboard", "--out", str(out), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert 'pip install "computeshare-desktop[tensorboard]"' in err
    assert not out.exists()  # said before the session opened
    with pytest.raises(ConfigError, match="tensorboard package"):
        HostOptions(tensorboard=True).config()
    HostOptions(tensorboard=False).config()  # the option off needs nothing


def test_from_python_too(no_tensorboard: None, tmp_path: Path) -> None:
    from computeshare_desktop import host

    with pytest.raises(ConfigError, match="tensorboard package"):
        host("simplenet", "mnist-sample", out_dir=tmp_path / "run", tensorboard=True,
             quiet=True)
    assert not (tmp_path / "run").exists()
