"""A worker back from a pause, as the windows tell it: the host's says
"Worker 1 (vm · CPU) resumed" and keeps its one row under its id and counts; the worker's
says "Resuming: joining the session again" before "Joined as worker 1"."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.events import (Joined, Paused, Resumed, WorkerInfo,  # noqa: E402
                                         WorkerJoined, WorkerLeft)
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.service import Tagged  # noqa: E402


def test_the_hosts_window_says_resumed_and_keeps_the_row() -> None:
    state = ProgressState("hub", total_rounds=60, expected_workers=1)
    first = WorkerInfo(1, "vm · CPU", "CPU, 2 cores", 0, pushed=53, key="k-vm")
    state.apply([Tagged("hub", WorkerJoined(first)), Tagged("hub", WorkerLeft(first, "paused"))])
    state.take_log()
    back = WorkerInfo(1, "vm · CPU", "CPU, 2 cores", 0, pushed=53, key="k-vm")
    state.apply([Tagged("hub", WorkerJoined(back, "paused"))])
    assert state.take_log() == ["Worker 1 (vm · CPU) resumed"]
    assert list(state.workers) == [1]
    lost = WorkerInfo(1, "vm · CPU", "CPU, 2 cores", 0, key="k-vm")
    state.apply([Tagged("hub", WorkerJoined(lost, "silent"))])
    assert state.take_log() == ["Worker 1 rejoined: vm · CPU (CPU, 2 cores), shard 1 of 1"]


def test_the_workers_log_says_resuming_before_joined() -> None:
    state = ProgressState("worker", total_rounds=60)
    state.apply([Tagged("worker", Joined(1, 0, 1, "mnist-sample", "simplenet", 60, "cpu"))])
    state.apply([Tagged("worker", Paused(reason="you"))])
    state.take_log()
    state.apply([Tagged("worker", Resumed()),
                 Tagged("worker", Joined(1, 0, 1, "mnist-sample", "simplenet", 60, "cpu",
                                         state="training"))])
    lines = state.take_log()
    assert lines[0] == "Resuming: joining the session again"
    assert lines[1].startswith("Joined as worker 1:")
