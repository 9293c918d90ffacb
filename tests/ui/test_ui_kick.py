"""Kick and the other ends of a worker's session, as the windows show them.

The kicked worker reads "The host removed this machine from this session…" (no error,
nothing to retry; the whole story with two instances: test_ui_two_instances_kick.py).
After any end (stop, kick, finish, hub lost) a worker's header, banner, table and log
agree: one round, no row still training, each thing said once. Refusals get one log line a
minute at most, and the subtitles name asynchronous updates and robust aggregation."""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from helpers.host import hosting  # noqa: E402
from computeshare_desktop.events import (Ended, Failed, Finished, HubStopped,  # noqa: E402
                                         Joined, Pushed, Rejected, RoundClosed, Stopped,
                                         WorkerDone, WorkerInfo)
from computeshare_desktop.gui.progress_state import REFUSALS_EVERY_S, ProgressState  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.hub.config import HubConfig  # noqa: E402
from computeshare_desktop.service import FEED, Tagged  # noqa: E402
from computeshare_desktop.gui.words import refusal  # noqa: E402
from computeshare_desktop.service.messages import refusal_message  # noqa: E402
from computeshare_desktop.service.host import HostService  # noqa: E402
from helpers.clock import Clock  # noqa: E402
from helpers.ui import Scripted  # noqa: E402

REMOVED = refusal("BANNED")  # what a kicked machine's window says (gui/words.py)
LIVE = {"joining", "loading data", "ready", "training"}


def infos(pushed: int) -> tuple[WorkerInfo, ...]:
    return (WorkerInfo(1, "vm · CPU", "CPU", 0, pushed=pushed, ready=True),
            WorkerInfo(2, "other · CPU", "CPU", 1, pushed=pushed, ready=True))


def feed_round(version: int) -> Tagged:
    return Tagged(FEED, RoundClosed(
        round=version, version=version, steps=1, loss=0.5, contributors=2, rejected=0,
        bytes_in=10, bytes_out=10, payload_bytes=20, samples=64, seconds=0.1, complete=True,
        compute_s=0.05, busy=0.5, workers=infos(version)))


def mine(event) -> Tagged:
    return Tagged("worker", event)


def push(version: int) -> Tagged:  # this machine's gradient for ``version`` (it then has +1)
    return mine(Pushed(version, 1, 0.5, 0.02, 32, True, version - 1500, 0))


def training_worker(qtbot) -> tuple[ProgressWindow, Scripted]:
    """A worker's window at round 1,560 of its own pushes, the hub's feed at 1,569 (the
    state the issue's SIGTERM left: 1569 in the banner, 1,560 in the header)."""
    runner, clock = Scripted("kick-test"), Clock()
    state = ProgressState("worker", name="vm", clock=clock)
    window = ProgressWindow(runner, state, title="Training for t", subtitle="Worker vm")
    qtbot.addWidget(window)
    runner.batches.append([mine(Joined(worker_id=1, shard=0, num_shards=2, dataset="mnist",
                                       model="simplenet", rounds=2500, device="CPU",
                                       batch_size=32))])
    runner.batches.append([feed_round(v) for v in range(1550, 1570)]
                          + [push(v) for v in range(1550, 1560)])
    for _ in range(2):
        clock.now += 0.1
        window.refresh()
    assert window.state.phase == "training" and window.progress_label.text().startswith(
        "Round 1,560 of")
    return window, runner


ENDS = {
    "stop": [[Tagged(FEED, HubStopped(1569))],  # the feed first, then the worker's own word
             [mine(HubStopped(1569)), push(1560), feed_round(1569), mine(Ended())]],
    "kick": [[mine(Failed(refusal_message("BANNED"), "BANNED"))], [mine(Ended())]],
    "finish": [[mine(WorkerDone(pushed=60, rejected=0, version=1569))],
               [Tagged(FEED, Finished(0.9, 0.1, 1569, "/out/trained_model.pth", 10.0)),
                mine(Ended(result=True))]],
    "hub lost": [[mine(Failed("the hub did not answer for 5 min", "UNREACHABLE"))],
                 [mine(Ended())]],
}


@pytest.mark.parametrize("end", list(ENDS))
def test_after_any_end_the_worker_window_agrees_with_itself(qtbot, end):
    window, runner = training_worker(qtbot)
    runner.batches.extend(ENDS[end])
    for _ in ENDS[end]:
        window.refresh()
    lines = window.log_pane.toPlainText().splitlines()
    s = window.state
    assert not s.active and window.chip.text() in ("Stopped", "Finished", "Error")
    assert not [r for r in s.workers.values() if r.state in LIVE]  # nobody still "training"
    table = window.workers_table
    shown = {table.item(r, table.columnCount() - 1).text() for r in range(table.rowCount())}
    assert not shown & LIVE, shown
    assert len(lines) == len(set(line.split(" ", 1)[-1] for line in lines))  # each once
    if end in ("stop", "finish"):  # the hub's round, everywhere it is named
        assert window.progress_label.text() == "Round 1,569 of 2,500"
        assert s.version == 1569 and not any("1,560" in line or "1560" in line
                                             for line in lines)
        assert not any("1569" in line for line in lines)  # one way of writing it, too
    if end == "stop":
        assert "round 1,569" in window.banner.text()
        assert sum("stopped the session" in line for line in lines) == 1
    if end == "kick":
        assert window.banner.text() == REMOVED and not window.banner.isHidden()
        assert window.chip.text() == "Stopped"  # not "Error": nothing went wrong here
        assert sum(REMOVED in line for line in lines) == 1
        assert not [line for line in lines if "Error" in line or "Type the PIN" in line]
        assert s.workers[1].state == "removed"


def test_a_stopped_hub_lists_no_worker_as_training():
    state = ProgressState("hub", total_rounds=2500, clock=Clock())
    state.apply([Tagged("hub", feed_round(v).event) for v in range(1, 5)])
    assert {r.state for r in state.workers.values()} == {"training"}
    state.apply([Tagged("hub", Stopped(4, "/out", "/out/trained_model.pth")),
                 Tagged("hub", Ended())])
    assert {r.state for r in state.workers.values()} == {"stopped"}


def test_refusals_are_summed_up_once_a_minute_at_most():
    clock = Clock()
    state = ProgressState("hub", total_rounds=10_000, clock=clock)
    said: list[tuple[float, str]] = []
    for _ in range(150):  # async mode: a stale update refused every second
        clock.now += 1.0
        state.apply([Tagged("hub", Rejected("STALE", "2 versions old"))])
        said += [(clock.now, line) for line in state.take_log()]
    times = [t for t, line in said if line.startswith("Refused ")]
    assert len(times) == 3 and all(b - a >= REFUSALS_EVERY_S for a, b in itertools.pairwise(times))
    assert said[0][1] == "Refused 1 request: 1 with an update made on an old model."
    assert "Refused 60 requests" in said[1][1] and "STALE" not in said[1][1]
    state.apply([Tagged("hub", Ended())])  # the rest once the session has ended
    last = state.take_log()
    assert len(last) == 1 and "Refused 29 requests" in last[0]


def test_the_hub_table_counts_refusals_and_its_log_sums_them_up(qtbot):
    runner, clock = Scripted("kick-test"), Clock()
    window = ProgressWindow(runner, ProgressState("hub", total_rounds=10_000, clock=clock),
                            title="Hosting t", subtitle="s")
    qtbot.addWidget(window)
    worker = WorkerInfo(1, "vm · CPU", "CPU", 0, pushed=204, rejected=14, ready=True)
    for second in range(10):
        runner.batches.append([Tagged("hub", Rejected("STALE", "")), Tagged("hub", RoundClosed(
            round=second + 1, version=second + 1, steps=1, loss=0.5, contributors=1,
            rejected=1, bytes_in=10, bytes_out=10, payload_bytes=20, samples=32, seconds=0.1,
            complete=True, compute_s=0.05, busy=0.5, workers=(worker,)))])
        clock.now += 1.0
        window.refresh()
    window.workers_table.show_rows(list(window.state.workers.values()), clock.now)
    assert window.workers_table.item(0, 5).text() == "204 · 14 refused"
    runner.batches.append([Tagged("hub", Rejected("BAD_PIN", ""))])  # the hub's log says it
    clock.now += REFUSALS_EVERY_S
    window.refresh()
    log = window.log_pane.toPlainText()
    assert log.count("Refused ") == 2 and "Refused 1 request:" in log and "BAD_PIN" not in log
    assert "STALE" not in log


def test_the_subtitles_name_async_updates_and_robust_aggregation(qtbot, tmp_path):
    def hub_window(config: HubConfig) -> ProgressWindow:  # a host service, never started
        window = ProgressWindow.for_hub(HostService(hosting(config, tmp_path / "run")))
        qtbot.addWidget(window)
        return window

    hub = hub_window(HubConfig(updates="async", aggregation="median"))
    assert hub.subtitle.text().endswith(
        "asynchronous updates · robust aggregation (median)")
    quiet = hub_window(HubConfig())
    assert "asynchronous" not in quiet.subtitle.text()
    assert "robust" not in quiet.subtitle.text()
    runner = Scripted("kick-test")  # a worker hears it in its Welcome
    runner.batches.append([mine(Joined(worker_id=1, shard=0, num_shards=2, dataset="mnist",
                                       model="simplenet", rounds=10, device="CPU",
                                       updates="async", aggregation="trimmed-mean"))])
    worker = ProgressWindow(runner, ProgressState("worker"), title="t", subtitle="Worker vm")
    qtbot.addWidget(worker)
    worker.refresh()
    worker.refresh()
    assert worker.subtitle.text() == (
        "Worker vm · asynchronous updates · robust aggregation (trimmed mean)")

