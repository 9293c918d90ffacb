"""A stopped session is listed in the main window and resumes from there or from the Host
dialog; its metrics never count a round twice."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers_net import free_ports, metrics  # noqa: E402
from ui_helpers import click, type_into  # noqa: E402


def test_stop_then_resume_from_the_recent_sessions_and_the_host_dialog(
        qtbot, main_window, tmp_path):
    out = tmp_path / "run"
    first = main_window.host(HostOptions(rounds=100_000, workers=1, train_here=True,
                                         out_dir=str(out), port=free_ports(), eval_every=0))
    qtbot.waitUntil(lambda: first.state.version >= 60, timeout=60_000)
    click(qtbot, first.stop_button)
    qtbot.waitUntil(lambda: not first.runner.running, timeout=20_000)
    stopped_at = first.state.version
    assert (out / "trained_model.pth").exists()

    recent = main_window.recent
    qtbot.waitUntil(lambda: recent.list.count() == 1, timeout=5_000)
    item = recent.list.item(0)
    assert "can be resumed" in item.text() and "run" in item.text()
    assert not recent.resume_button.isEnabled()
    recent.list.setCurrentItem(item)
    assert recent.resume_button.isEnabled()
    click(qtbot, recent.resume_button)
    second = main_window.progress_windows[-1]
    assert second is not first and second.runner.plan.resume
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
