"""Two app instances on one machine, a host and a worker, driven as people would: Host,
the PIN, the session appearing on the other instance, Join, training, and the final
accuracy in both windows. Each instance has its own settings, as on two computers."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.formatting import percent  # noqa: E402
from computeshare_desktop.service.options import worker_name  # noqa: E402
from helpers.net import free_ports, metrics  # noqa: E402
from helpers.ui import click, click_row, type_into  # noqa: E402
from helpers.app import instance  # noqa: E402

SESSION = "Two instances"


@pytest.mark.slow
def test_a_host_and_a_worker_instance_train_to_the_end(qtbot, styled_app, app_config,
                                                       tmp_path, monkeypatch):
    host_app = instance(qtbot, tmp_path / "host-home", monkeypatch, app_config)
    worker_app = instance(qtbot, tmp_path / "worker-home", monkeypatch, app_config)
    try:
        click(qtbot, host_app.host_button)
        dialog = host_app.host_dialog
        qtbot.waitUntil(dialog.isVisible)
        type_into(qtbot, dialog.rounds, "300")
        type_into(qtbot, dialog.eval_every, "100")
        type_into(qtbot, dialog.workers, "1")
        type_into(qtbot, dialog.name, SESSION)
        type_into(qtbot, dialog.port, str(free_ports()))
        type_into(qtbot, dialog.out_dir, str(tmp_path / "run"))
        if dialog.train_here.isChecked():  # the other instance does the training
            click(qtbot, dialog.train_here)
        click(qtbot, dialog.start_button)
        hub_window = host_app.progress_windows[0]
        pin = hub_window.pin_card.pin
        assert len(pin) == 6 and hub_window.pin_card.digits.text().replace(" ", "") == pin

        model = worker_app.model  # the session appears on the other instance by itself
        qtbot.waitUntil(lambda: model.row_of_name(SESSION) >= 0, timeout=30_000)
        row = model.row_of_name(SESSION)
        assert model.data(model.index(row, 4)) == "0 / 1"
        click_row(qtbot, worker_app.sessions_view, row)
        click(qtbot, worker_app.join_button)
        join = worker_app.join_dialog
        qtbot.waitUntil(join.isVisible)
        type_into(qtbot, join.pin_edit, pin[:3] + " " + pin[3:])  # as read out
        click(qtbot, join.join_button)
        qtbot.waitUntil(lambda: len(worker_app.progress_windows) == 1, timeout=30_000)
        worker_window = worker_app.progress_windows[0]

        qtbot.waitUntil(lambda: hub_window.workers_table.rowCount() == 1, timeout=30_000)
        # named by its machine and its device, as the hub's user sees it
        assert hub_window.workers_table.item(0, 0).text() == f"{worker_name()} · CPU"
        done = lambda w: w.state.phase == "finished" and w.finish_card.isVisible()  # noqa: E731
        qtbot.waitUntil(lambda: done(hub_window) and done(worker_window)
                        and worker_window.state.final.accuracy is not None, timeout=180_000)
        final = [r for r in metrics(tmp_path / "run") if r["type"] == "eval"][-1]
        shown = percent(final["accuracy"])
        assert shown in hub_window.finish_card.headline.text()
        assert shown in worker_window.finish_card.headline.text()
        elapsed = hub_window.eta_label.text()
        qtbot.wait(1500)  # the figures stop with the session
        assert hub_window.eta_label.text() == elapsed
        assert hub_window.cards["workers"].value.text() == "1 of 1"
    finally:
        for window in (worker_app, host_app):
            window.close()
