"""``computeshare-desktop --self-test`` and ``computeshare self-test``: a bundle checks itself.

The real entry points run as subprocesses (Qt offscreen, a hub and a worker on loopback,
the saved model evaluated, mDNS on 127.0.0.1); the runner's reporting is tested with steps
of our own, one of which fails.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from computeshare_desktop.selftest import (Step, Workspace, check_evaluation, default_steps,
                                           run_steps)

ROOT = Path(__file__).resolve().parent.parent
STEP_NAMES = [step.name for step in default_steps(Workspace(Path(".")))]


def _run(args: list[str], home: Path, extra_path: Path | None = None,
         ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COMPUTESHARE_HOME": str(home)}
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(extra_path),
                                                        os.environ.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=240)


def _ok_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("ok  ")]


@pytest.mark.slow
def test_the_desktop_app_self_test_passes_every_step(tmp_path):
    home = tmp_path / "home"
    started = time.monotonic()
    proc = _run(["-m", "computeshare_desktop.gui.app", "--self-test"], home)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert time.monotonic() - started < 60
    ok = _ok_lines(proc.stdout)
    assert [line.split(" (")[0] for line in ok] == [f"ok  {name}" for name in STEP_NAMES]
    assert "FAIL" not in proc.stdout and "all checks passed" in proc.stdout
    assert "platform" in ok[0] or "Qt " in ok[0]
    assert "30 rounds of mnist-sample on 127.0.0.1:" in ok[1]
    accuracy = float(ok[2].split("test accuracy ")[1].split("%")[0])
    assert 50 < accuracy <= 100
    assert not home.exists() or not any(home.iterdir())  # its own temporary home, not ours


@pytest.mark.slow
def test_the_cli_self_test_passes(tmp_path):
    proc = _run(["-m", "computeshare_desktop.cli", "self-test"], tmp_path / "home")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert len(_ok_lines(proc.stdout)) == len(STEP_NAMES)


@pytest.mark.slow
def test_a_broken_qt_fails_its_step_and_the_others_still_run(tmp_path):
    blocked = tmp_path / "blocked"
    for name in ("PySide6", "pyqtgraph"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError('{name} is blocked for this test')\n")
    proc = _run(["-m", "computeshare_desktop.gui.app", "--self-test"], tmp_path / "home",
                extra_path=blocked)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"FAIL {STEP_NAMES[0]}: ModuleNotFoundError")
    assert [line.split(" (")[0] for line in lines[1:len(STEP_NAMES)]] == \
        [f"ok  {name}" for name in STEP_NAMES[1:]]
    assert "some checks FAILED" in lines[-1]


def test_a_failing_step_is_named_and_the_later_steps_still_run():
    ran: list[str] = []

    def passes(name: str):
        def run(limit_s: float) -> str:
            ran.append(name)
            return f"{name} fine"
        return run

    def breaks(limit_s: float) -> str:
        ran.append("broken")
        raise OSError("disk on fire\nsecond line")

    out = io.StringIO()
    code = run_steps([Step("first", passes("first"), 5.0),
                      Step("broken step", breaks, 5.0),
                      Step("last", passes("last"), 5.0, main_thread=True)], out)
    assert code == 1 and ran == ["first", "broken", "last"]
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("ok  first (") and lines[0].endswith("): first fine")
    assert lines[1].startswith("FAIL broken step: OSError: disk on fire (")
    assert lines[2].startswith("ok  last (")


def test_every_step_passing_gives_exit_0():
    out = io.StringIO()
    assert run_steps([Step("a", lambda limit: "", 5.0),
                      Step("b", lambda limit: "x", 5.0, main_thread=True)], out) == 0
    assert [line.split(" (")[0] for line in out.getvalue().splitlines()] == ["ok  a", "ok  b"]


def test_a_step_that_hangs_or_overruns_fails_with_its_limit():
    release = threading.Event()

    def overruns(limit_s: float) -> str:
        time.sleep(0.2)
        return "late"

    out = io.StringIO()
    started = time.monotonic()
    try:
        code = run_steps([Step("hangs", lambda limit: str(release.wait(30)), 0.2),
                          Step("slow", overruns, 0.05, main_thread=True)], out, grace_s=0.1)
    finally:
        release.set()
    assert code == 1 and time.monotonic() - started < 5
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("FAIL hangs: did not finish within 0.2 s (")
    assert lines[1].startswith("FAIL slow: took longer than 0.05 s (")
    time.sleep(0.1)  # the released thread ends (the suite checks for leaked threads)


def test_evaluation_without_a_trained_model_fails(tmp_path):
    with pytest.raises(RuntimeError, match="training step failed"):
        check_evaluation(Workspace(tmp_path), 5.0)


def _handles_sigterm(pid: int) -> bool:
    """True once the process catches SIGTERM (Linux: the SigCgt mask in /proc)."""
    with open(f"/proc/{pid}/status") as fh:
        caught = next(line for line in fh if line.startswith("SigCgt:")).split()[1]
    return bool(int(caught, 16) & (1 << (signal.SIGTERM - 1)))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_without_self_test_the_app_opens_its_window_and_sigterm_closes_it(tmp_path):
    """The window path still works now that Qt loads lazily in gui.app."""
    env = {**os.environ, "COMPUTESHARE_HOME": str(tmp_path / "home"),
           "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.Popen([sys.executable, "-m", "computeshare_desktop", "-v",
                             "--interface", "127.0.0.1"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and not _handles_sigterm(proc.pid):
            assert time.monotonic() < deadline, "the app did not start within 60 s"
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr and "desktop exiting (0)" in stderr


def test_a_windowed_app_without_stderr_logs_to_a_file(tmp_path, monkeypatch):
    """A windowed bundle (Windows, macOS from Finder) has sys.stderr None: logging goes to
    a file under the user's log folder instead of nowhere."""
    import logging
    import sys

    from computeshare_desktop.gui import app

    monkeypatch.setattr(sys, "stderr", None)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))  # platformdirs' log folder on Linux
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()
    try:
        path = app.setup_logging(1)
        assert path is not None and tmp_path in path.parents
        logging.getLogger("computeshare_desktop.test").info("héllo from a windowed app")
        for handler in root.handlers:
            handler.flush()
        assert "héllo from a windowed app" in path.read_text(encoding="utf-8")
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:] = saved
