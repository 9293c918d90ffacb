"""One session per output folder, with real processes: a second ``host --resume`` (or a plain
``host --out``) on a folder whose hub is training is refused with exit code 10 naming the
first hub's PID and port, and the first trains on with its metrics.jsonl whole; a hub killed
with SIGKILL leaves no lock, and ``host --resume`` takes the folder at once."""

from __future__ import annotations

import os
import signal
import time

import pytest

from computeshare_desktop.errors import ExitCode
from computeshare_desktop.hub.folder_lock import holder
from helpers.net import free_ports, metrics, wait_for
from helpers.processes import finish, host, join, kill_all

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")]


def rounds(folder) -> list[int]:
    return [r["version"] for r in metrics(folder) if r.get("type") == "round"]


def test_resume_on_a_live_folder_is_refused_then_a_killed_hub_resumes_at_once(tmp_path):
    port, other = free_ports(), free_ports()
    hub = host(tmp_path, port, "--workers", "1", "--rounds", "100000", "--eval-every", "0")
    worker = join(port, "w0")
    procs = [hub, worker]
    try:
        wait_for(lambda: (tmp_path / "checkpoint.pt").exists() and len(rounds(tmp_path)) >= 60,
                 120, "a checkpoint and 60 rounds")
        live = holder(tmp_path)
        assert live is not None and (live.pid, live.port) == (hub.pid, port)
        before = rounds(tmp_path)
        for extra in (("--resume",), ()):  # resume, and a new session in the same folder
            second = host(tmp_path, other, *extra)
            procs.append(second)
            code, _, err = finish(second, 60)
            assert code == ExitCode.FOLDER_IN_USE, err
            assert f"process {hub.pid}, port {port}" in err
        wait_for(lambda: len(rounds(tmp_path)) >= len(before) + 20, 60, "20 rounds more")
        after = rounds(tmp_path)
        assert after[:len(before)] == before  # nothing cut: the refused ones wrote nothing
        assert after == list(range(1, len(after) + 1))
        assert hub.poll() is None
        os.kill(hub.pid, signal.SIGKILL)
        hub.wait(10)
        began = time.monotonic()
        resumed = host(tmp_path, port, "--resume")
        procs.append(resumed)
        wait_for(lambda: (holder(tmp_path) or None) is not None
                 and holder(tmp_path).pid == resumed.pid, 60, "the resumed hub's lock")
        wait_for(lambda: holder(tmp_path).port == port, 60, "the resumed hub listening")
        assert resumed.poll() is None
        print(f"resumed hub held the folder {time.monotonic() - began:.1f} s after the kill")
    finally:
        kill_all(*procs)
