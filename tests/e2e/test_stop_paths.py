"""Stopping a real ``computeshare host``: the model is kept, workers are told in seconds."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time

import pytest
import torch

from computeshare_desktop.hub.paired_machines import FILE_NAME as PAIRED_FILE
from computeshare_desktop.hub.paired_machines import PairedMachines
from computeshare_desktop.transport.keys import KnownHubs
from helpers.cli import run_cli
from helpers.net import cli, free_ports, metrics, wait_for
from helpers.portable import CATCHABLE_STOPS, OWN_GROUP

pytestmark = pytest.mark.slow
PIN = "135790"


def host(out, port, *extra, **popen):
    return cli("host", "--pin", PIN, "--bind", "127.0.0.1", "--port", str(port), "--out",
               str(out), "--quiet", "--workers", "1", "--rounds", "100000", "--eval-every", "0",
               *extra, **popen)


def join(port, *extra):  # --wait: started with its hub, which may not listen yet
    return cli("join", f"127.0.0.1:{port}", "--device", "cpu", "--quiet", "--threads", "1",
               "--name", "w", "--wait", "60", *extra,
               env={**os.environ, "COMPUTESHARE_PIN": PIN})


class Lines:
    """A process's stderr, read as it comes, each line with the time it arrived."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[tuple[float, str]] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append((time.monotonic(), line.rstrip()))

    def first(self, text: str) -> float | None:
        return next((t for t, line in list(self.lines) if text in line), None)


def rounds(out) -> int:
    return sum(1 for r in metrics(out) if r["type"] == "round")


@pytest.mark.alone  # it times the stop
@pytest.mark.parametrize("sig", CATCHABLE_STOPS, ids=lambda s: getattr(s, "name", str(s)))
def test_a_stopped_host_saves_its_model_and_its_worker_ends_within_2_s(tmp_path, sig):
    port = free_ports()
    hub = host(tmp_path, port, **OWN_GROUP)
    worker = join(port, "--come-back", "0")  # the immediate exit (by default it waits)
    err = Lines(worker)
    try:
        wait_for(lambda: rounds(tmp_path) >= 20, 90, "20 rounds")
        hub.send_signal(sig)
        stopped = time.monotonic()
        worker.wait(timeout=30)  # timed on its own: the hub's save may take longer
        ended = time.monotonic()
        hub_out, hub_err = hub.communicate(timeout=60)
    finally:
        for proc in (hub, worker):
            if proc.poll() is None:
                proc.kill()
    assert hub.returncode == 130, hub_err
    assert "model saved to" in hub_err and "--resume" in hub_err
    assert worker.returncode == 7
    err.thread.join(5)
    said = err.first("the hub stopped the session")
    assert said is not None and said - stopped < 2.0, err.lines
    assert ended - stopped < 4.0
    errors = [line for _, line in err.lines if "error" in line]
    assert len(errors) == 1 and "Traceback" not in "".join(x for _, x in err.lines)
    state = torch.load(tmp_path / "trained_model.pth", weights_only=True)
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert checkpoint["version"] >= 20
    assert all(torch.is_tensor(v) for v in state.values())
    # the folder now holds a session: a new one is refused, a resume is not (the same
    # `computeshare host` in this process: a third process start cost 2-3 s)
    code = run_cli(["host", "--pin", PIN, "--bind", "127.0.0.1", "--port", str(free_ports()),
                    "--out", str(tmp_path), "--quiet", "--workers", "1", "--rounds", "100000",
                    "--eval-every", "0"])
    assert code == 2


def test_a_vanished_hub_is_noticed_within_10_s(tmp_path):
    port = free_ports()
    hub = host(tmp_path, port)
    worker = join(port, "--give-up", "60")
    err = Lines(worker)
    try:
        wait_for(lambda: rounds(tmp_path) >= 20, 90, "20 rounds")
        hub.kill()  # no goodbye (SIGKILL; TerminateProcess on Windows)
        killed = time.monotonic()
        noticed = wait_for(lambda: err.first("has not answered"), 15, "the worker to notice")
        assert noticed - killed < 10.0
        assert worker.poll() is None  # it keeps trying: a restarted hub would get it back
    finally:
        for proc in (hub, worker):
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


def listening(port: int) -> bool:
    """True once something accepts connections on 127.0.0.1:``port``."""
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_restarted_worker_rejoins_without_the_pin_and_a_new_session_asks_for_it(tmp_path):
    port = free_ports()
    home = {"COMPUTESHARE_HOME": str(tmp_path / "home")}
    hub = cli("host", "--pin", PIN, "--bind", "127.0.0.1", "--port", str(port), "--out",
              str(tmp_path / "one"), "--quiet", "--workers", "1", "--rounds", "100000",
              "--eval-every", "0", env=home)
    no_pin = {k: v for k, v in os.environ.items() if k != "COMPUTESHARE_PIN"} | home
    first = cli("join", f"127.0.0.1:{port}", "--device", "cpu", "--quiet", "--threads", "1",
                "--name", "laptop", "--wait", "60", env={**home, "COMPUTESHARE_PIN": PIN})
    second = None
    try:
        wait_for(lambda: rounds(tmp_path / "one") >= 10, 90, "10 rounds")
        first.kill()
        first.communicate()
        done = rounds(tmp_path / "one")
        # stdin is a pipe, not DEVNULL: Windows says NUL is a terminal (bpo-28654), and a
        # worker would then wait for a PIN typed on the console
        second = subprocess.Popen(
            [*first.args[:3], "join", f"127.0.0.1:{port}", "--device", "cpu", "--quiet",
             "--threads", "1", "--name", "laptop"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=no_pin)
        wait_for(lambda: rounds(tmp_path / "one") >= done + 10, 90, "training again")
    finally:
        for proc in (hub, first, *([second] if second else [])):
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    # A new session of the same hub lets its paired machines in without the PIN (that is
    # tests/hub/test_hub_pairing_sessions.py); once its host turned that off, it no longer
    # allows the key: told at once, not after 15 s
    PairedMachines(tmp_path / "home" / PAIRED_FILE).set_enabled(False)
    hub = cli("host", "--pin", PIN, "--bind", "127.0.0.1", "--port", str(port), "--out",
              str(tmp_path / "two"), "--quiet", "--workers", "1", "--rounds", "10", env=home)
    try:
        wait_for(lambda: listening(port), 60, "the new session listening")  # then time it
        began = time.monotonic()
        third = subprocess.run(
            [*first.args[:3], "join", f"127.0.0.1:{port}", "--device", "cpu", "--quiet",
             "--name", "laptop", "--wait", "30"], input="",
            capture_output=True, text=True, env=no_pin, timeout=60)
        assert time.monotonic() - began < 8.0
        assert third.returncode == 5 and "PIN" in third.stderr, third.stderr
        # ...and forgets that hub: the next join asks for the PIN (prompt or environment)
        assert KnownHubs(tmp_path / "home" / "identity" / "worker-laptop.key").key_for(
            f"127.0.0.1:{port}") is None
    finally:
        hub.kill()
        hub.communicate()
