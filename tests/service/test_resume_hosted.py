"""A resumed session is hosted as it was: its name, port, whether this machine trains too,
and its training recipe come back from its session.json (from the app and from ``host
--resume``); an older session.json without them still resumes. An output folder that cannot
be written is refused, with the reason, before anything starts."""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path

import pytest

from computeshare_desktop.app_options import AppConfig
from computeshare_desktop.cli import commands
from computeshare_desktop.cli.main import build_parser, main
from computeshare_desktop.errors import ConfigError, ExitCode, PortInUseError
from computeshare_desktop.hub.outputs import CHECKPOINT_FILE, OutputDir
from computeshare_desktop.service import HostService
from computeshare_desktop.service.options import HostOptions, host_plan
from helpers.net import free_ports

RECIPE = dict(workers=1, rounds=100_000, batch_size=8, eval_every=0, optimizer="adamw",
              lr=0.003, weight_decay=0.01, schedule="cosine", warmup=5, clip_grad=1.0,
              label_smoothing=0.1, aggregation="median", preset="wifi")


def saved_session(folder: Path, host: dict | None) -> Path:
    """A stopped session's folder as a hub leaves it (its checkpoint only named)."""
    config = HostOptions(**RECIPE).config().to_json()
    OutputDir(folder).write_session({"config": config, **({"host": host} if host else {})})
    (folder / CHECKPOINT_FILE).write_bytes(b"")
    return folder


def test_a_stopped_session_resumes_with_its_name_port_local_worker_and_recipe(
        tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    out = tmp_path / "run"
    chosen = HostOptions(**RECIPE, name="Lab session", port=free_ports(), train_here=False,
                         advertise=False, out_dir=str(out))
    # Quick: its port is taken, so the hub ends once its session (and session.json) is
    # built, saving no model; the checkpoint of a stopped session is then only named.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", chosen.port))
        taken.listen()
        hub = HostService(host_plan(chosen, AppConfig(bind="127.0.0.1"))).start()
        assert hub.wait(60) and isinstance(hub.error, PortInUseError), hub.error
    (out / CHECKPOINT_FILE).write_bytes(b"")

    resumed = HostOptions.resuming(out)
    assert (resumed.name, resumed.port, resumed.train_here, resumed.advertise) == (
        "Lab session", chosen.port, False, False)
    assert resumed.config() == chosen.config()  # the recipe, the preset, the workers...
    assert resumed.resume and not resumed.advanced
    # with the codec chosen by hand, the codec stays an advanced choice
    manual = dataclasses.replace(chosen, advanced=True, codec="fp16")
    OutputDir(out).write_session({**OutputDir(out).read_session(),
                                  "config": manual.config().to_json()})
    again = HostOptions.resuming(out)
    assert again.advanced and again.codec == "fp16" and again.config() == manual.config()


def test_an_older_session_json_resumes_with_the_default_hosting(tmp_path):
    resumed = HostOptions.resuming(saved_session(tmp_path, host=None))
    assert (resumed.name, resumed.train_here) == ("", True)
    assert (resumed.optimizer, resumed.schedule, resumed.preset) == ("adamw", "cosine", "wifi")
    assert OutputDir(tmp_path).summary()["host"] == {}
    # a value of the wrong type is left out, the others kept
    folder = saved_session(tmp_path / "odd", host={"name": "Lab", "port": "7070"})
    assert (HostOptions.resuming(folder).name, HostOptions.resuming(folder).port) == (
        "Lab", HostOptions().port)


def test_host_resume_on_the_command_line_keeps_the_name_and_port_unless_given(tmp_path):
    folder = saved_session(tmp_path, host={"name": "Lab session", "port": 7171,
                                           "train_here": True, "advertise": False})
    args = build_parser().parse_args(["host", "--resume", "--out", str(folder)])
    plan = commands._host_plan(args)
    assert (plan.options.name, plan.port, plan.options.advertise, plan.resume) == (
        "Lab session", 7171, False, True)
    assert plan.config.optimizer == "adamw" and plan.config.schedule == "cosine"
    args = build_parser().parse_args(["host", "--resume", "--out", str(folder),
                                      "--name", "Other", "--port", "7272"])
    plan = commands._host_plan(args)
    assert (plan.options.name, plan.port) == ("Other", 7272)


def test_an_output_folder_under_a_file_is_refused_before_the_session_opens(
        tmp_path, capsys, monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("not a folder", encoding="utf-8")
    for folder in (afile / "sub", afile):
        options = HostOptions(out_dir=str(folder))
        with pytest.raises(ConfigError, match=f"{afile} is a file, not a folder"):
            options.output_path()
    # the command line: exit 2 and the reason, nothing written
    code = main(["host", "--out", str(afile / "sub"), "--port", "0", "--no-advertise"])
    assert code == ExitCode.USAGE
    assert f"{afile} is a file, not a folder" in capsys.readouterr().err
    # a folder this user cannot write (root can write anywhere: the check is faked)
    monkeypatch.setattr("computeshare_desktop.service.options.os.access", lambda *a: False)
    with pytest.raises(ConfigError, match="cannot be written by this user"):
        HostOptions(out_dir=str(tmp_path / "new" / "run")).output_path()
    assert not (tmp_path / "new").exists()


def test_a_file_the_hub_cannot_write_is_said_without_a_traceback(caplog):
    from computeshare_desktop.service.host import _failure

    error = _failure(NotADirectoryError(20, "Not a directory", "/x/afile/sub/session.json"))
    assert str(error) == "cannot write /x/afile/sub/session.json: Not a directory"
    assert not any(r.exc_info for r in caplog.records)
    assert "unexpected error" in str(_failure(ValueError("a bug")))

