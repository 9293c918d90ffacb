"""Each retry of a silent hub is in a worker window's log once: the worker's own line ("no
answer from the hub; retrying in 0.5 s", through the window's log tap), not a second line of
the window's; the status line says it."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.events import HubSilent  # noqa: E402
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.progress_worker import SILENT  # noqa: E402
from computeshare_desktop.gui.sources import LogTap  # noqa: E402
from computeshare_desktop.service import Tagged  # noqa: E402


def test_each_retry_is_logged_once() -> None:
    state = ProgressState("worker", name="laptop")
    tap = LogTap("MainThread").attach()
    try:
        driver_log = logging.getLogger("computeshare_desktop.worker.driver")
        for backoff in (0.25, 0.5, 1.0):  # what the driver does at each retry
            driver_log.warning("no answer from the hub; retrying in %.1f s", backoff)
            state.apply([Tagged("worker", HubSilent(retry_in=backoff))])
        lines = state.take_log() + tap.take()
    finally:
        tap.detach()
    assert [line for line in lines if "retrying" in line] == [
        "no answer from the hub; retrying in 0.2 s", "no answer from the hub; retrying in 0.5 s",
        "no answer from the hub; retrying in 1.0 s"]
    assert state.status == SILENT
