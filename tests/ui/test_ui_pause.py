"""Polite workers in the app: the Join dialog's threads, speed limit and pause-on-battery reach
the worker's plan; the worker window's Pause/Resume button asks the service, and the window
says why the worker is paused."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from helpers.host import HeldJoin, joining  # noqa: E402
from computeshare_desktop.events import (Paused, Resumed, WorkerInfo, WorkerJoined,  # noqa: E402
                                         WorkerLeft)
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.join_dialog import JoinDialog  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.service import JoinTarget, Tagged  # noqa: E402
from computeshare_desktop.worker.pause import PauseReason  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402

TARGET = JoinTarget.from_address("127.0.0.1:9")  # nothing listens; nothing is started


def test_the_join_dialog_fields_reach_the_workers_plan(qtbot, ui_home) -> None:
    made: list[HeldJoin] = []

    def start_runner(target: JoinTarget, pin: str) -> HeldJoin:
        made.append(HeldJoin(joining(target, pin=pin, name="w")))
        return made[-1]

    dialog = JoinDialog(TARGET, start_runner)
    qtbot.addWidget(dialog)
    dialog.show()
    choices = dialog.choices
    assert choices.pause_on_battery.isChecked()  # on by default (a laptop pauses)
    assert choices.threads.text() == "Automatic" and choices.max_rate.text() == "No limit"
    type_into(qtbot, choices.threads, "1")
    type_into(qtbot, choices.max_rate, "300")
    click(qtbot, choices.pause_on_battery)
    type_into(qtbot, dialog.pin_edit, "428 913")
    click(qtbot, dialog.join_button)
    assert len(made) == 1
    plan = made[0].plan
    assert (plan.options.pin, plan.options.threads, plan.options.max_rate,
            plan.options.pause_on_battery) == \
        ("428913", 1, 300.0, False)
    dialog.reject()


def test_the_worker_window_pauses_resumes_and_says_why(qtbot) -> None:
    runner = HeldJoin(joining(TARGET, pin="123456", name="w"))
    window = ProgressWindow.for_worker(runner, [])
    qtbot.addWidget(window)
    window.show()
    pause = window.pause_control
    assert pause is not None and pause.button.isVisible() and pause.button.text() == "Pause"
    assert not pause.label.isVisible()
    click(qtbot, pause.button)
    assert runner.pauses.reason is PauseReason.YOU
    assert (pause.button.text(), pause.label.text()) == (
        "Resume", "Pausing at the end of this round…")
    runner.script = [Tagged("worker", Paused(reason="you"))]
    window.refresh()
    assert pause.label.isVisible() and pause.label.text() == "Paused by you"
    click(qtbot, pause.button)
    assert runner.pauses.reason is None
    runner.script = [Tagged("worker", Resumed())]
    window.refresh()
    assert pause.button.text() == "Pause" and not pause.label.isVisible()
    runner.script = [Tagged("worker", Paused(reason="battery"))]  # the battery watch's
    window.refresh()
    assert pause.label.text() == "Paused: on battery power — resumes on AC"
    assert pause.button.text() == "Resume"
    window.confirmed = True
    window.close()


def test_the_hosts_table_shows_a_paused_worker_as_paused_not_lost() -> None:
    state = ProgressState("hub", total_rounds=10, expected_workers=2)
    first = WorkerInfo(2, "laptop · CPU", "cpu", 1, key="k-laptop")
    state.apply([Tagged("hub", WorkerJoined(first)), Tagged("hub", WorkerLeft(first, "paused"))])
    assert state.workers[2].state == "paused"
    assert any(line.endswith("paused") for line in state.take_log())
    back = WorkerInfo(3, "laptop · CPU", "cpu", 1, key="k-laptop")  # Resume: a new id
    state.apply([Tagged("hub", WorkerJoined(back))])
    assert list(state.workers) == [3]  # one row for the machine
