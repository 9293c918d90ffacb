"""Hosting from the GUI: the Host dialog, a real hub plus this machine's worker, the result."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QUrl  # noqa: E402

from computeshare_desktop.gui.formatting import percent  # noqa: E402
from computeshare_desktop.gui.main_window import MainWindow  # noqa: E402
from computeshare_desktop.service.options import worker_name  # noqa: E402
from computeshare_desktop.gui.settings import Settings, settings_path  # noqa: E402
from helpers.net import metrics  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402
from helpers.app import fill_host_dialog  # noqa: E402


def test_host_with_local_training_runs_to_the_end_and_shows_final_accuracy(
        qtbot, main_window, tmp_path, styled_app, app_config):
    out = tmp_path / "run"
    click(qtbot, main_window.host_button)
    dialog = main_window.host_dialog
    qtbot.waitUntil(dialog.isVisible)
    fill_host_dialog(qtbot, dialog, out=out, rounds=60, eval_every=20)
    click(qtbot, dialog.start_button)

    assert len(main_window.progress_windows) == 1
    window = main_window.progress_windows[0]
    assert window.pin_card is not None and len(window.pin_card.pin) == 6
    assert window.pin_card.digits.text() == f"{window.pin_card.pin[:3]} {window.pin_card.pin[3:]}"
    qtbot.waitUntil(lambda: window.state.phase == "finished" and window.finish_card.isVisible(),
                    timeout=60_000)

    final = [r for r in metrics(out) if r["type"] == "eval"][-1]
    assert final["final"] and final["version"] == 60
    assert percent(final["accuracy"]) in window.finish_card.headline.text()
    assert str(out / "trained_model.pth") in window.finish_card.model_path.text()
    assert window.finish_card.open_button.isEnabled()
    assert window.output_url() == QUrl.fromLocalFile(str(out))
    assert window.progress_bar.value() == window.progress_bar.maximum() == 60
    rows = window.state.workers.values()
    assert [w.pushed for w in rows] == [60]
    assert next(iter(rows)).name == f"{worker_name()} · CPU (host)"  # machine, device, role
    assert window.workers_table.item(0, 5).text() == "60"  # pushed
    assert window.workers_table.item(0, 2).text() == "100% · 32"  # its share: all of it
    assert window.workers_table.item(0, 3).text().endswith("%")  # how busy its device was
    assert window.cards["per_round"].value.text().endswith("KB")
    assert window.cards["busy"].value.text().endswith("%")
    assert window.cards["accuracy"].value.text() == percent(final["accuracy"])
    qtbot.waitUntil(lambda: not window.runner.running, timeout=15_000)

    # The dialog's values and the window geometry are remembered for the next launch.
    main_window.close()
    saved = json.loads(settings_path().read_text(encoding="utf-8"))
    assert saved["version"] == 1 and saved["host"]["rounds"] == 60
    assert saved["window"]["geometry"]
    again = MainWindow(Settings(), app_config)
    try:
        second = again.open_host_dialog()
        assert (second.rounds.value(), second.eval_every.value()) == (60, 20)
        assert second.train_here.isChecked()
        assert second.out_dir.text().startswith(str(tmp_path))
        assert second.out_dir.text() != str(out)  # a fresh run folder each time
        second.reject()
    finally:
        again.close()


def test_host_dialog_refuses_bad_values_in_place(qtbot, main_window, tmp_path):
    used = tmp_path / "used"
    used.mkdir()
    (used / "metrics.jsonl").write_text("{}\n", encoding="utf-8")
    click(qtbot, main_window.host_button)
    dialog = main_window.host_dialog
    type_into(qtbot, dialog.out_dir, str(used))
    click(qtbot, dialog.start_button)
    assert dialog.isVisible() and dialog.error.isVisible()
    assert "already holds a training session" in dialog.error.text()
    assert main_window.progress_windows == []
    click(qtbot, dialog.cancel_button)
    assert not dialog.isVisible()
