"""``computeshare host`` when every worker refuses its model, over real sockets on loopback:
a block of ``!!`` lines within 2 s of the last refusal (even with --quiet), then, once nobody
else came for the grace period, the model and a checkpoint kept as on a stop and exit code 9
(ExitCode.MODEL_REFUSED) with the reason. The workers are real WorkerSessions that run
another torch release than the hub's, so the hub turns them away at the door (TORCH_MISMATCH),
as it would a machine with torch 2.13 installed.

Times are read from the command's own stderr: each line is stamped as it is written."""

from __future__ import annotations

import io
import socket
import sys
import threading
import time

import pytest
from helpers.cli import run_cli
from helpers.graph import model_file
from helpers.net import WorkerThread, free_ports, wait_for

from computeshare_desktop.errors import ExitCode, RejectedError
from computeshare_desktop.hub import core as hub_core
from computeshare_desktop.hub.refusals import REFUSED_GRACE_S
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.worker import core as worker_core

PIN = "864209"
GRACE = 3.0  # the session's grace period here (REFUSED_GRACE_S is a minute)
REPORT_S = 2.0  # the host reports it within 2 s of the last refusal


class Stamped(io.TextIOBase):
    """A stderr that remembers when each line was written."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []
        self._part = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        now = time.monotonic()
        with self._lock:
            *done, self._part = (self._part + text).split("\n")
            self.lines += [(now, line) for line in done]
        return len(text)

    def after(self, words: str, count: int) -> list[str]:
        """The last line holding ``words`` and the ``count - 1`` lines after it."""
        at = [i for i, (_, line) in enumerate(self.lines) if words in line][-1]
        return [line for _, line in self.lines[at:at + count]]

    def last(self, words: str) -> float:
        """When the last line holding ``words`` was written."""
        return [t for t, line in self.lines if words in line][-1]

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines) + "\n" + self._part


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def test_the_grace_period_is_the_one_the_exit_code_states() -> None:
    assert f"within {REFUSED_GRACE_S:.0f} s" in ExitCode.MODEL_REFUSED.meaning
    assert ExitCode.MODEL_REFUSED.value == 9


@pytest.mark.slow
def test_host_says_nobody_can_train_at_once_then_exits_9(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(hub_core, "REFUSED_GRACE_S", GRACE)
    monkeypatch.setattr(worker_core, "torch_release", lambda: "2.13.0")  # the workers' only
    err = Stamped()
    monkeypatch.setattr(sys, "stderr", err)
    port, out = free_ports(), tmp_path / "session"
    argv = ["host", "--model", model_file(tmp_path), "--dataset", "mnist-sample",
            "--workers", "2", "--rounds", "5", "--batch-size", "8", "--out", str(out),
            "--bind", "127.0.0.1", "--port", str(port), "--no-advertise", "--pin", PIN,
            "--quiet"]
    ended: dict[str, float] = {}

    def host() -> None:
        ended["code"] = run_cli(argv)
        ended["at"] = time.monotonic()

    thread = threading.Thread(target=host, name="test-host")
    thread.start()
    try:
        wait_for(lambda: listening(port) or not thread.is_alive(), 120, "the hub to listen")
        workers = [WorkerThread(port, f"old-{i}", pin=PIN) for i in (1, 2)]
        for worker in workers:
            worker.thread.join(60)
            assert isinstance(worker.error, RejectedError), worker.error
            assert worker.error.code is RejectCode.TORCH_MISMATCH
        thread.join(120)
    finally:
        if thread.is_alive():
            thread.join(30)
    text = err.text()
    assert ended["code"] == ExitCode.MODEL_REFUSED == 9, text
    refused = err.last("refused: the hub runs torch")  # the hub's line at each refusal
    said = err.last("!! NO WORKER CAN TRAIN THIS MODEL")  # at each: nobody else is left
    assert 0 <= said - refused < REPORT_S, text
    block = err.after("!! NO WORKER CAN TRAIN THIS MODEL", 3)
    last = block[1].split("The last, ")[1].split(":")[0]
    assert last in ("old-1", "old-2")
    assert ("all 2 workers that came refused it" in block[0]
            and "install torch" in block[1] and "exit code 9" in block[2]), block
    assert ended["at"] - said >= GRACE  # nobody else came: it waited the grace period out
    print(f"said {said - refused:.3f} s after the last refusal; ended "
          f"{ended['at'] - said:.1f} s after that (grace {GRACE:.0f} s)")
    final = [line for _, line in err.lines if line.startswith("computeshare host: error: ")]
    assert len(final) == 1 and final[0].startswith(
        f"computeshare host: error: every worker that came (2) refused the model and nobody "
        f"else came within {GRACE:.0f} s; the last, {last}: the hub runs torch "), text
    assert (out / "checkpoint.pt").exists() and (out / "trained_model.pth").exists()
    assert "Traceback" not in text
