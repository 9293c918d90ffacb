"""Stop, resume, and the worker comes back: two app instances; the host stops its session,
the worker's window offers to rejoin (checked by default), the host resumes the session from
its recent sessions ("Resumed at round N", no worker yet), and the worker rejoins it by
itself, without the PIN."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.comeback import OFFER  # noqa: E402
from helpers.app import instance  # noqa: E402
from helpers.app import host_session, open_join  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402


@pytest.mark.slow
def test_stop_resume_and_the_worker_comes_back_without_the_pin(
        qtbot, styled_app, app_config, tmp_path, monkeypatch):
    host_app = instance(qtbot, tmp_path / "host-home", monkeypatch, app_config)
    worker_app = instance(qtbot, tmp_path / "worker-home", monkeypatch, app_config)
    out = tmp_path / "run"
    try:
        hub = host_session(qtbot, host_app, out, rounds=100_000)
        qtbot.waitUntil(lambda: hub.runner.session is not None, timeout=30_000)
        session_id = hub.runner.session.session_id
        join = open_join(qtbot, worker_app, session_id)
        type_into(qtbot, join.pin_edit, hub.pin_card.pin)
        click(qtbot, join.join_button)
        qtbot.waitUntil(lambda: len(worker_app.progress_windows) == 1, timeout=30_000)
        worker = worker_app.progress_windows[0]
        qtbot.waitUntil(lambda: hub.state.version >= 5, timeout=60_000)

        click(qtbot, hub.stop_button)
        offer = worker_app.comebacks.offers[worker].box
        qtbot.waitUntil(offer.isVisible, timeout=20_000)
        assert offer.text() == OFFER and offer.isChecked()  # offered, by default
        qtbot.waitUntil(lambda: not hub.runner.running, timeout=30_000)
        stopped_at = hub.state.version

        resumed = host_app.resume(str(out))
        assert resumed is not None
        resumed.refresh()
        assert resumed.progress_label.text() == f"Resumed at round {stopped_at:,} of 100,000"
        assert len(resumed.state.loss) == stopped_at  # the curve before the stop
        # the worker's app sees the session again and rejoins it (a new window, no PIN)
        qtbot.waitUntil(lambda: len(worker_app.progress_windows) == 1
                        and worker_app.progress_windows[0] is not worker, timeout=60_000)
        qtbot.waitUntil(lambda: resumed.state.version >= stopped_at + 3
                        and resumed.workers_table.rowCount() == 1, timeout=60_000)
        back = worker_app.progress_windows[0]
        assert back.runner.plan.options.pin == "" and back.state.phase == "training"
    finally:
        for window in (worker_app, host_app):
            window.close()
