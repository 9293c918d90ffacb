"""Two app instances of one user on one machine (they share the settings, so both list the
same Recent sessions): while the first hosts a session, the second lists it as Running, offers
no Resume, and a resume asked for anyway is refused naming the process and the port that
hold the folder, with nothing written there; once the first stops it, Resume works."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.main_window import MainWindow  # noqa: E402
from computeshare_desktop.gui.settings import Settings  # noqa: E402
from computeshare_desktop.hub.folder_lock import holder  # noqa: E402
from helpers.net import free_ports, metrics  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402


def instance(qtbot, app_config) -> MainWindow:
    settings = Settings()  # read now: the user's settings file, as the other instance left it
    settings.set_confirm_stop(False)
    window = MainWindow(settings, app_config)
    window.show()
    qtbot.waitExposed(window)
    return window


def recent_row(app: MainWindow, folder: str) -> int:
    return next(i for i, row in enumerate(app.recent.rows) if row.folder == folder)


@pytest.mark.slow
def test_a_live_session_is_running_in_the_other_instance_and_cannot_be_resumed(
        qtbot, styled_app, app_config, tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    folder = tmp_path / "run"
    run = str(folder)
    first = instance(qtbot, app_config)
    port = free_ports()
    click(qtbot, first.host_button)
    dialog = first.host_dialog
    qtbot.waitUntil(dialog.isVisible)
    type_into(qtbot, dialog.rounds, "100000")
    type_into(qtbot, dialog.eval_every, "0")
    type_into(qtbot, dialog.workers, "1")
    type_into(qtbot, dialog.port, str(port))
    type_into(qtbot, dialog.out_dir, run)
    if not dialog.train_here.isChecked():  # this machine trains: rounds go by
        click(qtbot, dialog.train_here)
    click(qtbot, dialog.start_button)
    qtbot.waitUntil(lambda: len(first.progress_windows) == 1, timeout=30_000)
    hub_window = first.progress_windows[0]
    second = None
    try:
        qtbot.waitUntil(lambda: hub_window.state.version >= 3, timeout=60_000)
        qtbot.waitUntil(lambda: (holder(run) or 0) and holder(run).port == port,
                        timeout=10_000)
        second = instance(qtbot, app_config)  # the same user opens the app again
        row = recent_row(second, run)
        assert second.recent.rows[row].state == "Running"
        second.recent.table.selectRow(row)
        assert not second.recent.resume_button.isEnabled()
        assert f"process {os.getpid()}, port {port}" in second.recent.rows[row].note

        rounds = len(metrics(folder))
        assert second.resume(run) is None  # asked for anyway (not from the table)
        message = second.statusBar().currentMessage()
        assert message.startswith("Cannot resume:") and f"port {port}" in message
        assert not second.progress_windows and not second.runners
        qtbot.waitUntil(lambda: len(metrics(folder)) > rounds, timeout=30_000)  # untouched:
        versions = [r["version"] for r in metrics(folder) if r["type"] == "round"]
        assert versions == sorted(versions) and len(set(versions)) == len(versions)

        click(qtbot, hub_window.stop_button)  # the first stops it: now it can be resumed
        qtbot.waitUntil(lambda: not hub_window.runner.running, timeout=60_000)
        qtbot.waitUntil(lambda: second.recent.rows[recent_row(second, run)].state
                        == "Stopped", timeout=10_000)
        second.recent.table.selectRow(recent_row(second, run))
        assert second.recent.resume_button.isEnabled()
        resumed = second.resume(run)
        assert resumed is not None
        qtbot.waitUntil(lambda: resumed.state.version > max(versions), timeout=60_000)
        click(qtbot, resumed.stop_button)
        qtbot.waitUntil(lambda: not resumed.runner.running, timeout=60_000)
    finally:
        for app in (first, second):
            if app is not None:
                for window in list(app.progress_windows):
                    if window.runner.running:
                        window.runner.stop()
                        window.runner.join(30)
                app.close()
