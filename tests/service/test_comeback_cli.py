"""`computeshare join` comes back by default: after the host
stops the session it says at once, in its own words, that it waits up to 10 minutes for the
session to be resumed, and exits with code 7 when that wait ends (Ctrl-C, or no hub in time).
In process, with a fake worker run: the real rejoin is tests/hub/test_hub_pairing_comeback.py."""

from __future__ import annotations

import pytest
from helpers.host import joining
from helpers.cli import run_cli
from helpers.net import free_ports

from computeshare_desktop.cli import commands
from computeshare_desktop.errors import ExitCode, HubStoppedError, HubUnreachableError
from computeshare_desktop.service import JoinPlan, JoinService
from computeshare_desktop.service.comeback import run_coming_back, waiting_for
from computeshare_desktop.service.options import JoinTarget
from computeshare_desktop.worker import pick_device

WAITING = ("the host stopped the session at round 42; waiting up to 10 min for it to be "
           "resumed (Ctrl-C to leave; --come-back 0 to exit at once)")


def stopped(service: JoinService) -> None:
    service.error = HubStoppedError("the hub stopped the session at version 42")
    service.error_code, service.stopped_at = "HUB_STOPPED", 42
    raise service.error


def fake_runs(*then):
    """A run that stops the first worker as its host would, then does ``then`` in turn."""
    runs: list[JoinService] = []

    def run(service: JoinService) -> None:
        runs.append(service)
        if len(runs) == 1:
            stopped(service)
        then[min(len(runs) - 2, len(then) - 1)](service)

    return run, runs


def ctrl_c(service: JoinService) -> None:
    raise KeyboardInterrupt


def patch_run(monkeypatch, run) -> None:
    """``join`` starts each worker before it waits for it: stop the real one first."""
    def until_done(service: JoinService) -> None:
        service.stop()
        assert service.join(10)
        run(service)

    monkeypatch.setattr(commands, "_run_until_done", until_done)


def test_join_waits_by_default_and_ctrl_c_exits_7(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    run, runs = fake_runs(ctrl_c)
    patch_run(monkeypatch, run)
    port = free_ports()  # nothing listens: the stopped hub has closed
    code = run_cli(["join", f"127.0.0.1:{port}", "--pin", "123456", "--quiet", "--device",
                    "cpu", "--name", "vm"])
    err = capsys.readouterr().err
    assert code == ExitCode.HUB_STOPPED == 7, err
    assert len(runs) == 2  # it came back: a second worker waited for the hub
    assert WAITING in err and "left the wait" in err
    assert err.index(WAITING) < err.index("left the wait")


def test_come_back_0_exits_7_at_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    run, runs = fake_runs(ctrl_c)
    patch_run(monkeypatch, run)
    code = run_cli(["join", f"127.0.0.1:{free_ports()}", "--pin", "123456", "--quiet",
                    "--device", "cpu", "--come-back", "0"])
    err = capsys.readouterr().err
    assert code == 7 and len(runs) == 1 and "waiting" not in err


def plan(port: int) -> JoinPlan:
    return joining(JoinTarget(host="127.0.0.1", port=port, label="hub"), pin="1", name="vm",
                    device=pick_device("cpu"), follow_hub=False)


def test_a_session_not_resumed_in_time_ends_with_the_stop():
    def no_hub(service: JoinService) -> None:  # its probe ran out of time
        service.error = HubUnreachableError("nothing listens")
        service.error_code = "UNREACHABLE"
        raise service.error

    run, runs = fake_runs(no_hub)
    said: list[str] = []
    with pytest.raises(HubStoppedError):
        run_coming_back(JoinService(plan(free_ports())), run, 90.0, say=said.append)
    assert len(runs) == 2 and "waiting up to 90 s" in said[0]
    assert said[-1] == "the session was not resumed within 90 s"
    assert waiting_for(600) == "10 min" and waiting_for(150) == "150 s"


def test_a_rejoined_worker_ends_as_usual():
    def finished(service: JoinService) -> None:
        service.result = object()  # type: ignore[assignment]

    run, runs = fake_runs(finished)
    first = JoinService(plan(free_ports()))
    assert run_coming_back(first, run, 60.0, say=lambda _: None) is runs[1] is not first
