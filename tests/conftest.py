"""Suite-wide fixtures: every thread and child process a test starts is gone when it ends."""

from __future__ import annotations

import os
import threading
import time

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


# Singletons a library starts once per process and keeps (pyzmq's zero-copy collector).
PROCESS_WIDE = {"zmq.utils.garbage"}


def _children() -> set[int]:
    me, found = str(os.getpid()), set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
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
