"""Sharing the machine between pytest-xdist's workers (the README runs ``pytest -n 2``): a
test marked ``alone`` (it compares or bounds timings) runs while no other test does."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def _machine_share(alone: bool) -> Iterator[None]:
    """Under ``pytest -n N`` (the README's command), a test marked ``alone`` runs while no
    other test does: it waits for the other workers' current tests, and they wait for it.
    Everything else shares the machine. A no-op without xdist, and on Windows (no flock)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None or sys.platform == "win32":
        yield
        return
    import fcntl

    base = Path(tempfile.gettempdir()) / f"computeshare-tests-{run}"
    wants = Path(f"{base}.wants")  # one file per worker waiting to run alone
    wants.mkdir(exist_ok=True)
    mine = wants / os.environ.get("PYTEST_XDIST_WORKER", str(os.getpid()))
    with open(f"{base}.lock", "ab") as lock:
        if alone:
            mine.touch()
            fcntl.flock(lock, fcntl.LOCK_EX)
            mine.unlink()
        else:
            while any(wants.iterdir()):  # a waiting ``alone`` test goes first
                time.sleep(0.1)
            fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Holds the machine's share for the whole test: its fixtures' set-up and teardown too."""
    with _machine_share(alone=item.get_closest_marker("alone") is not None):
        yield
