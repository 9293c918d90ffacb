"""The command line's progress bar: after `host --resume` (or joining a session under way) the
rate counts only the rounds done since, not the rounds before as if done in the first second
(which read "74/400 [00:01<00:05, 54.68round/s]")."""

from __future__ import annotations

import time

import pytest

from computeshare_desktop.cli.progress import HubView, RoundBar, WorkerView
from computeshare_desktop.events import Joined, Pushed
from computeshare_desktop.service import Tagged
from helpers.clock import Clock


def rate(bar: RoundBar) -> float:
    assert bar.bar is not None
    facts = bar.bar.format_dict
    return facts["rate"] or (facts["n"] - facts["initial"]) / facts["elapsed"]


def test_a_resumed_bar_counts_its_rate_from_the_resume() -> None:
    clock = Clock(time.time())  # from the wall clock tqdm started the bar on
    bar = RoundBar(0, quiet=False)
    assert bar.bar is not None
    bar.bar._time = clock  # type: ignore[attr-defined]
    bar.reset(400, 74)  # Listening of a hub resumed at version 74
    assert bar.bar.n == 74 and bar.bar.total == 400
    for _ in range(2):
        clock.now += 1.0
        bar.advance(bar.bar.n + 1)
    assert rate(bar) == pytest.approx(1.0)  # one round a second, not 38 or 75
    assert "74/400" not in str(bar.bar) and "76/400" in str(bar.bar)
    bar.close()


def test_a_worker_joining_under_way_counts_from_its_first_round() -> None:
    clock = Clock(time.time())  # from the wall clock tqdm started the bar on
    view = WorkerView(quiet=False)
    assert view.bar.bar is not None
    view.bar.bar._time = clock  # type: ignore[attr-defined]
    view.on(Tagged("worker", Joined(1, 0, 1, "mnist-sample", "mlp", 400, "cpu",
                                    state="training")))
    for version in (74, 75):
        clock.now += 1.0
        view.on(Tagged("worker", Pushed(version, 1, 2.0, 0.5, 32, True, version - 73, 0)))
    assert view.bar.bar.n == 76
    assert rate(view.bar) == pytest.approx(1.0)
    view.close()


def test_the_host_says_a_paused_worker_resumed_and_the_worker_says_it_rejoins(capsys) -> None:
    from computeshare_desktop.events import Resumed, WorkerInfo, WorkerJoined

    hub = HubView(quiet=False, show_pin=False)
    vm = WorkerInfo(1, "vm · CPU", "CPU", 0, key="k-vm")
    for returning in ("", "paused", "silent"):
        hub.on(Tagged("hub", WorkerJoined(vm, returning)))
    hub.close()
    worker = WorkerView(quiet=False)
    worker.on(Tagged("worker", Resumed()))
    worker.close()
    err = capsys.readouterr().err
    assert ("worker 1 (vm · CPU, CPU) joined" in err and "worker 1 (vm · CPU, CPU) resumed" in err
            and "worker 1 (vm · CPU, CPU) rejoined" in err)
    assert "resuming: joining the session again" in err
