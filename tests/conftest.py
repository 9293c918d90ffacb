"""Suite-wide fixtures: every thread and child process a test starts is gone when it ends."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest
from helpers.machine_share import pytest_runtest_protocol  # noqa: F401  (``alone`` tests under -n N)

QT_CHECK = ("from PySide6.QtWidgets import QApplication, QWidget\n"
            "app = QApplication([])\nQWidget().show()")


def _start_xvfb() -> str | None:
    """A private Xvfb display for the GUI tests (focus, Tab order, real windows), when
    Xvfb is installed and Qt's xcb plugin loads there; None otherwise. Linux only: macOS
    (XQuartz ships an Xvfb) and Windows builds of Qt have no xcb plugin."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None or not sys.platform.startswith("linux"):
        return None
    for number in range(90 + os.getpid() % 400, 600):
        if os.path.exists(f"/tmp/.X11-unix/X{number}") or os.path.exists(f"/tmp/.X{number}-lock"):
            continue
        proc = subprocess.Popen([xvfb, f":{number}", "-screen", "0", "1920x1080x24",
                                 "-nolisten", "tcp"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        atexit.register(lambda p=proc: (p.terminate(), p.wait(5)))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and proc.poll() is None:
            if os.path.exists(f"/tmp/.X11-unix/X{number}"):
                break
            time.sleep(0.05)
        if proc.poll() is not None:
            continue
        env = {**os.environ, "DISPLAY": f":{number}", "QT_QPA_PLATFORM": "xcb"}
        try:
            ok = subprocess.run([sys.executable, "-c", QT_CHECK], env=env, timeout=60,
                                capture_output=True).returncode == 0
        except subprocess.TimeoutExpired:
            ok = False
        if ok:
            return f":{number}"
        proc.terminate()
        return None  # Xvfb runs, but Qt cannot use it (xcb libraries missing)
    return None


# GUI tests run in a real X server (Xvfb) where there is one (Linux), else offscreen. Set
# QT_QPA_PLATFORM yourself to choose (offscreen is the fallback, and quicker).
if "QT_QPA_PLATFORM" not in os.environ:
    display = _start_xvfb()
    if display is not None:
        os.environ["DISPLAY"], os.environ["QT_QPA_PLATFORM"] = display, "xcb"
    else:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"


# Singletons a library starts once per process and keeps (pyzmq's zero-copy collector,
# tqdm's monitor, which torch.export's interpreter starts on its first export).
PROCESS_WIDE = {"zmq.utils.garbage", "tqdm._monitor"}


def _children() -> set[int]:
    """This process's live children, from /proc (Linux; elsewhere the check is skipped)."""
    me, found = str(os.getpid()), set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] != "Z":
                found.add(int(entry))
    return found


@pytest.fixture(autouse=True, scope="session")
def private_home(tmp_path_factory):
    """Keys and identities go to a throwaway folder, never the user's own (subprocesses too)."""
    home = tmp_path_factory.mktemp("computeshare-home")
    old = os.environ.get("COMPUTESHARE_HOME")
    os.environ["COMPUTESHARE_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("COMPUTESHARE_HOME", None)
    else:
        os.environ["COMPUTESHARE_HOME"] = old


@pytest.fixture(autouse=True)
def no_leaked_threads_or_processes():
    """Fail a test that leaves a thread or a child process running (after a short grace)."""
    threads_before = set(threading.enumerate())
    children_before = _children() if os.path.isdir("/proc") else set()
    yield
    deadline = time.monotonic() + 5.0
    while True:
        threads = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()
                   and type(t).__module__ not in PROCESS_WIDE]
        children = (_children() - children_before) if os.path.isdir("/proc") else set()
        if not threads and not children:
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    leaked = [(t.name, type(t).__name__) for t in threads]
    pytest.fail(f"leaked threads {leaked} / child processes {sorted(children)}")
