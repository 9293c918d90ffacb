"""A stopped session is listed in the main window and resumes from there or from the Host
dialog; its metrics never count a round twice."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.net import free_ports, metrics  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402


def test_stop_then_resume_from_the_recent_sessions_and_the_host_dialog(
        qtbot, main_window, tmp_path):
    out = tmp_path / "run"
    first = main_window.host(HostOptions(rounds=100_000, workers=1, train_here=True,
                                         out_dir=str(out), port=free_ports(), eval_every=0,
                                         name="Resume test"))
    qtbot.waitUntil(lambda: first.state.version >= 60, timeout=60_000)
    click(qtbot, first.stop_button)
    qtbot.waitUntil(lambda: not first.runner.running, timeout=20_000)
    stopped_at = first.state.version
    assert (out / "trained_model.pth").exists()

    recent = main_window.recent
    qtbot.waitUntil(lambda: recent.table.rowCount() == 1, timeout=5_000)
    row = recent.row(0)
    assert (row.name, row.state, row.resumable) == ("Resume test", "Stopped", True)
    assert not recent.resume_button.isEnabled()
    recent.table.selectRow(0)
    assert recent.resume_button.isEnabled()
    click(qtbot, recent.resume_button)
    second = main_window.progress_windows[-1]
    assert second is not first and second.runner.plan.resume
    plan = second.runner.plan  # hosted as it was (the recipe: tests/service/test_resume_hosted)
    assert (plan.options.name, plan.port, plan.options.train_here) == (
        "Resume test", first.runner.plan.port, True)
    # At once, before the hub has loaded anything: where it stopped, and the curves before
    second.refresh()
    assert second.progress_label.text() == f"Resumed at round {stopped_at:,} of 100,000"
    assert second.progress_bar.value() == stopped_at
    before = [r["version"] for r in metrics(out) if r["type"] == "round"]
    assert before[-1] == stopped_at
    assert [v for v, _ in second.state.loss][:len(before)] == before
    assert len(second.state.loss_smooth) >= len(before)
    qtbot.waitUntil(lambda: second.state.version >= stopped_at + 30, timeout=60_000)
    click(qtbot, second.stop_button)
    qtbot.waitUntil(lambda: not second.runner.running, timeout=20_000)

    versions = [r["version"] for r in metrics(out) if r["type"] == "round"]
    assert versions == sorted(set(versions)), "a round was recorded twice"
    assert versions[-1] >= stopped_at + 30

    # The Host dialog offers the same for a folder that holds a stopped session
    dialog = main_window.open_host_dialog()
    qtbot.waitUntil(dialog.isVisible)
    assert not dialog.resume_button.isVisible()
    type_into(qtbot, dialog.out_dir, str(out))
    assert dialog.resume_button.isVisible() and "stopped session" in dialog.resume_note.text()
    type_into(qtbot, dialog.port, str(free_ports()))
    click(qtbot, dialog.resume_button)
    third = main_window.progress_windows[-1]
    assert third.runner.plan.resume and third.runner.plan.config.rounds == 100_000
    qtbot.waitUntil(lambda: third.state.version > versions[-1], timeout=60_000)
    third.runner.stop()
    qtbot.waitUntil(lambda: not third.runner.running, timeout=20_000)


def test_a_killed_hub_resumes_from_its_checkpoint_and_the_curves_follow(tmp_path):
    """metrics.jsonl may run past the checkpoint (a killed hub): the window first shows the
    last round recorded, then the checkpoint's once the session is built; torn lines and
    other records are skipped."""
    from computeshare_desktop.gui.progress_state import ProgressState
    from computeshare_desktop.gui.resumed import Resumed

    lines = [json.dumps({"type": "round", "version": v, "loss": 2.0 / v}) for v in range(1, 9)]
    lines[3:3] = [json.dumps({"type": "eval", "version": 3, "accuracy": 0.5}), '{"type": "ro']
    lines.append(json.dumps({"type": "mode", "version": 8, "preset": "lan"}))
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    state = ProgressState("hub", total_rounds=2_500)
    resumed = Resumed(tmp_path, state)
    assert (state.version, len(state.loss), state.accuracy) == (8, 8, [(3, 0.5)])
    assert resumed.text(state) == "Resumed at round 8 of 2,500"
    resumed.follow(SimpleNamespace(version=6), state)  # its checkpoint
    assert (state.version, [v for v, _ in state.loss]) == (6, [1, 2, 3, 4, 5, 6])
    assert resumed.text(state) == "Resumed at round 6 of 2,500"
    assert state.loss_smooth[0] == (1, 2.0) and state.loss_smooth[-1][1] > state.loss[-1][1]
    state.version = 7  # the first new round
    assert resumed.text(state) == "Round 7 of 2,500"
