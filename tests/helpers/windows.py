"""Progress windows in the states a test needs, fed scripted events (no session runs): a hub
many rounds in, a hub training with two workers, a hub one laptop trains for, a hub whose
session finished."""

from __future__ import annotations

from computeshare_desktop.events import (Ended, Finished, Listening, RoundClosed, StateChanged,
                                         WorkerInfo, WorkerJoined, WorkerReady)
from computeshare_desktop.gui.progress_state import ProgressState
from computeshare_desktop.gui.progress_window import ProgressWindow
from computeshare_desktop.service import Tagged
from helpers.clock import Clock
from helpers.ui import Scripted


def window_with_rounds(qtbot, rounds: int, loss: float) -> ProgressWindow:
    """A hub's window, shown, after ``rounds`` rounds of two workers at ``loss``."""
    state = ProgressState("hub", total_rounds=20_000, expected_workers=2)
    workers = tuple(WorkerInfo(i, f"w{i}", "CPU", i - 1, ready=True) for i in (1, 2))
    state.apply([Tagged("hub", RoundClosed(
        round=v, version=v, steps=1, loss=loss, contributors=2, rejected=0, bytes_in=10,
        bytes_out=10, payload_bytes=20, samples=64, seconds=0.1, complete=True,
        compute_s=0.05, busy=0.5, workers=workers)) for v in range(1, rounds + 1)])
    window = ProgressWindow(Scripted(), state, title="Hosting t", subtitle="s")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window


def busy_hub_window(qtbot) -> ProgressWindow:
    """A hub's window as it is while training: listening, its address in the hint, figures
    in every card."""
    state = ProgressState("hub", total_rounds=300, expected_workers=2, name="vm — mnist-sample")
    workers = tuple(WorkerInfo(i, f"w{i}", "CPU", i - 1, ready=True) for i in (1, 2))
    state.apply([Tagged("hub", Listening("0.0.0.0", 47321, 47322, 47323, "ab12 cd34",
                                         ("192.168.1.23", "10.0.0.5"), "/tmp/run"))])
    state.apply([Tagged("hub", RoundClosed(
        round=v, version=v, steps=1, loss=0.1234, contributors=2, rejected=0,
        bytes_in=123_456, bytes_out=654_321, payload_bytes=20, samples=64, seconds=0.1,
        complete=True, compute_s=0.05, busy=0.5, workers=workers)) for v in range(1, 30)])
    window = ProgressWindow(Scripted(), state, title="Hosting vm — mnist-sample",
                            subtitle="simplenet on mnist-sample · 2 worker(s) · 300 rounds of "
                                     "32 per worker · Synchronous rounds", pin="428913")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.refresh()
    return window


LAPTOP = WorkerInfo(1, "laptop · CPU", "CPU", 0, key="k-laptop")


def a_round(version: int, loss: float, source: str = "hub",
            worker: WorkerInfo = LAPTOP) -> Tagged:
    """Round ``version`` closed at ``loss``, ``worker`` its one contributor."""
    w = WorkerInfo(worker.id, worker.name, worker.device, worker.shard, version, 0,
                   32 * version, True, 0.1, key=worker.key)
    return Tagged(source, RoundClosed(
        round=version, version=version, steps=1, loss=loss, contributors=1, rejected=0,
        bytes_in=1000, bytes_out=2000, payload_bytes=3000, samples=32, seconds=0.1,
        complete=True, compute_s=0.05, busy=0.5, workers=(w,)))


def laptop_hub_window(qtbot, clock: Clock) -> ProgressWindow:
    """A hub's window one worker trains for, 8 rounds in."""
    state = ProgressState("hub", total_rounds=100, expected_workers=1, name="t", clock=clock)
    runner = Scripted("states-test")
    window = ProgressWindow(runner, state, title="Hosting t", subtitle="s", pin="428913",
                            refresh_ms=10_000)
    qtbot.addWidget(window)
    runner.script = [Tagged("hub", e) for e in (
        Listening("127.0.0.1", 7341, 7342, 7343, "ab" * 8, ("127.0.0.1",), "/out"),
        WorkerJoined(LAPTOP), WorkerReady(LAPTOP), StateChanged("training"))]
    window.refresh()
    for version in range(1, 9):
        clock.now += 0.5
        runner.script = [a_round(version, 2.0 + version % 2)]
        window.refresh()
    return window


def finished_window(qtbot, tmp_path) -> ProgressWindow:
    """A hub's window, shown, after its session finished into ``tmp_path``."""
    state = ProgressState("hub", total_rounds=3, expected_workers=1)
    state.apply([Tagged("hub", e) for e in (
        Listening("127.0.0.1", 7341, 7342, 7343, "ab" * 8, ("127.0.0.1",), str(tmp_path)),
        Finished(0.97, 0.1, 3, str(tmp_path / "trained_model.pth"), 1.0), Ended(result=True))])
    window = ProgressWindow(Scripted(), state, title="Hosting t", subtitle="s", pin="428913",
                            refresh_ms=10_000)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window
