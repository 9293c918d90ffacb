"""Joining from the GUI: a hub in another process shows up through loopback mDNS, a wrong PIN
is refused inside the dialog, the right one opens the progress window and training runs."""

from __future__ import annotations

import json
import subprocess

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.formatting import percent  # noqa: E402
from helpers.net import RunningHub, WorkerThread, cli, free_ports  # noqa: E402
from helpers.net import PIN as HUB_PIN  # noqa: E402
from helpers.ui import click, click_row, join_by_address, type_into  # noqa: E402

PIN = "246135"
SESSION = "ui-test-session"


def start_hub(out, port: int) -> subprocess.Popen[str]:
    return cli("host", "--pin", PIN, "--workers", "1", "--rounds", "3000", "--eval-every", "0",
               "--interface", "127.0.0.1", "--bind", "127.0.0.1", "--port", str(port),
               "--out", str(out), "--name", SESSION, "--quiet")


@pytest.mark.slow
def test_discovered_session_wrong_pin_then_join_and_train(qtbot, main_window, tmp_path):
    hub = start_hub(tmp_path / "hub", free_ports())
    try:
        model, view = main_window.model, main_window.sessions_view
        qtbot.waitUntil(lambda: model.row_of_name(SESSION) >= 0, timeout=30_000)
        row = model.row_of_name(SESSION)
        assert model.data(model.index(row, 4)) == "0 / 1"
        click_row(qtbot, view, row)
        assert main_window.selected_session().name == SESSION
        click(qtbot, main_window.join_button)
        dialog = main_window.join_dialog
        qtbot.waitUntil(dialog.isVisible)

        type_into(qtbot, dialog.pin_edit, "000000")
        click(qtbot, dialog.join_button)
        qtbot.waitUntil(lambda: dialog.join_button.isEnabled() and dialog.message.isVisible()
                        and "Wrong PIN" in dialog.message.text(), timeout=20_000)
        assert "Wrong PIN" in dialog.message.text()
        assert dialog.isVisible() and main_window.progress_windows == []

        type_into(qtbot, dialog.pin_edit, PIN[:3] + " " + PIN[3:])  # as read out: "246 135"
        click(qtbot, dialog.join_button)
        qtbot.waitUntil(lambda: len(main_window.progress_windows) == 1, timeout=20_000)
        assert not dialog.isVisible()
        window = main_window.progress_windows[0]
        qtbot.waitUntil(lambda: window.state.version >= 10, timeout=60_000)
        assert window.progress_bar.maximum() == 3000 and window.progress_bar.value() >= 10
        assert window.state.loss and window.cards["loss"].value.text() != "—"
        qtbot.waitUntil(lambda: window.workers_table.rowCount() == 1
                        and int(window.workers_table.item(0, 5).text().replace(",", "")) > 0,
                        timeout=10_000)
        qtbot.waitUntil(lambda: model.data(model.index(model.row_of_name(SESSION), 4))
                        == "1 / 1", timeout=15_000)

        click(qtbot, window.stop_button)  # Leave
        qtbot.waitUntil(lambda: not window.runner.running, timeout=20_000)
        qtbot.waitUntil(lambda: window.state.phase == "stopped", timeout=5_000)
        assert window.state.error is None
    finally:
        hub.kill()
        hub.communicate()


def test_connect_by_address_shows_lockout_in_the_dialog(qtbot, main_window, tmp_path,
                                                        monkeypatch):
    from computeshare_desktop.hub import pairing

    monkeypatch.setattr(pairing, "LOCAL_SOURCES", frozenset())  # as from another machine
    hub = RunningHub(tmp_path / "hub", workers=1, rounds=10)
    try:
        click(qtbot, main_window.connect_button)
        dialog = main_window.join_dialog
        qtbot.waitUntil(dialog.isVisible)
        type_into(qtbot, dialog.address_edit, "not an address:x")
        type_into(qtbot, dialog.pin_edit, "1")
        click(qtbot, dialog.join_button)
        assert "is not a hub address" in dialog.message.text()

        type_into(qtbot, dialog.address_edit, f"127.0.0.1:{hub.port}")
        assert HUB_PIN != "111111"
        messages = []
        for _ in range(9):  # 5 wrong PINs are free, then pairing pauses for 1, 2, 4... s
            type_into(qtbot, dialog.pin_edit, "111111")
            click(qtbot, dialog.join_button)
            qtbot.waitUntil(lambda: dialog.join_button.isEnabled(), timeout=20_000)
            messages.append(dialog.message.text())
            if "Too many wrong PINs" in messages[-1]:
                break
        assert all("Wrong PIN" in m for m in messages[:5]), messages  # words (gui/words.py)
        assert "Too many wrong PINs" in messages[-1] and "paused pairing" in messages[-1], messages
        assert not any("BAD_PIN" in m or "LOCKED_OUT" in m for m in messages), messages
        assert dialog.isVisible() and main_window.progress_windows == []
        click(qtbot, dialog.cancel_button)
    finally:
        hub.close()


@pytest.mark.slow
def test_worker_window_follows_the_hub_accuracy_workers_and_final_result(
        qtbot, main_window, tmp_path):
    out = tmp_path / "hub"
    hub = RunningHub(out, workers=2, rounds=240, batch_size=8, eval_every=40)
    other = None
    try:
        window = join_by_address(qtbot, main_window, hub.port, HUB_PIN)
        other = WorkerThread(hub.port, "other-machine")
        assert window.charts.second_plot.getPlotItem().titleLabel.text.find("Test accuracy") > 0

        qtbot.waitUntil(lambda: len(window.state.accuracy) >= 2, timeout=120_000)
        assert window.cards["accuracy"].value.text().endswith("%")
        def curve_drawn() -> bool:  # drawn within a throttled refresh, not at every event
            xs, _ = window.charts.second_curve.getData()
            return xs is not None and len(xs) >= 1

        qtbot.waitUntil(curve_drawn, timeout=5_000)
        table = window.workers_table
        qtbot.waitUntil(lambda: table.rowCount() >= 2, timeout=10_000)
        names = [table.item(r, 0).text() for r in range(table.rowCount())]
        assert "other-machine" in names, names
        assert sum(name.endswith("(this machine)") for name in names) == 1, names
        assert window.cards["compute"].value.text().endswith("ms")

        qtbot.waitUntil(lambda: window.state.phase == "finished" and not window.runner.running
                        and window.finish_card.isVisible(), timeout=180_000)
        other.join(60)
        hub.join(60)
        lines = (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        evals = [json.loads(line) for line in lines]
        final = [m for m in evals if m["type"] == "eval" and m["final"]][-1]
        assert window.state.final.accuracy == pytest.approx(final["accuracy"])
        assert window.state.latest_accuracy() == pytest.approx(final["accuracy"])
        assert percent(final["accuracy"]) in window.finish_card.headline.text()
        assert window.state.error is None
    finally:
        if other is not None:
            other.close()
        hub.close()


def test_a_machine_that_joined_before_rejoins_without_the_pin(qtbot, main_window, tmp_path):
    hub = RunningHub(tmp_path / "hub", workers=1, rounds=100_000, eval_every=0)
    try:
        window = join_by_address(qtbot, main_window, hub.port, HUB_PIN)
        qtbot.waitUntil(lambda: window.state.version >= 3, timeout=30_000)
        click(qtbot, window.stop_button)  # Leave: the hub still knows this machine's key
        qtbot.waitUntil(lambda: not window.runner.running, timeout=20_000)
        window.close()
        main_window.progress_windows.clear()

        click(qtbot, main_window.connect_button)
        dialog = main_window.join_dialog
        qtbot.waitUntil(dialog.isVisible)
        type_into(qtbot, dialog.address_edit, f"127.0.0.1:{hub.port}")
        click(qtbot, dialog.join_button)  # no PIN typed
        qtbot.waitUntil(lambda: len(main_window.progress_windows) == 1, timeout=20_000)
        again = main_window.progress_windows[0]
        qtbot.waitUntil(lambda: again.state.phase == "training", timeout=30_000)
        assert len(hub.of_kind("worker_joined")) == 2
        assert hub.session.core.pairing.lockout.failures == 0
        click(qtbot, again.stop_button)
        qtbot.waitUntil(lambda: not again.runner.running, timeout=20_000)
    finally:
        hub.close()
