"""The Host dialog prepares a table before the session opens, as it does a folder of
images: a bar that counts the rows, and Cancel, which keeps nothing."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QDialog  # noqa: E402

from computeshare_desktop.data import table_progress  # noqa: E402
from computeshare_desktop.gui import data_preview  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402

ROWS = 600


def test_a_tables_preparation_shows_its_bar_cancels_and_starts_again(
        qtbot, tmp_path, monkeypatch, styled_app):
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "datasets"))
    monkeypatch.setattr(table_progress, "CHECK_ROWS", 100)
    table = tmp_path / "flowers.csv"
    rows = [f"{i % 13},{i * 0.5},{'rose' if i % 3 else 'tulip'}" for i in range(ROWS)]
    table.write_text("length,width,kind\n" + "\n".join(rows) + "\n", encoding="utf-8")
    real, asked, clicked = data_preview.prepare, threading.Event(), threading.Event()

    def held(spec, *, cancel, **kwargs):
        def after_the_click() -> bool:  # the first look at Cancel waits for the click
            asked.set()
            clicked.wait(10)
            return cancel()
        return real(spec, cancel=after_the_click, **kwargs)

    monkeypatch.setattr(data_preview, "prepare", held)
    dialog = HostDialog(HostOptions(out_dir=str(tmp_path / "run")))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    type_into(qtbot, dialog.dataset.lineEdit(), str(table))
    panel = dialog.data_panel
    qtbot.waitUntil(lambda: panel.shown is not None and panel.spec == str(table),
                    timeout=10_000)
    assert panel.previews.wait(5)
    click(qtbot, dialog.start_button)
    qtbot.waitUntil(lambda: panel.bar.isVisible() and asked.is_set(), timeout=10_000)
    click(qtbot, panel.cancel_button)
    clicked.set()
    qtbot.waitUntil(lambda: not panel.preparing, timeout=10_000)
    assert panel.preparation.wait(5)
    assert "cancelled" in dialog.error.text() and dialog.start_button.isEnabled()
    assert not list((tmp_path / "datasets").rglob("meta.json"))

    halfway, seen = threading.Event(), threading.Event()

    def shown(spec, *, cancel, progress, **kwargs):
        def told(step) -> None:
            progress(step)
            if step.done == ROWS:  # the first pass's end: the bar shows it before more
                halfway.set()

        def held_halfway() -> bool:
            if halfway.is_set():
                seen.wait(10)
            return cancel()
        return real(spec, cancel=held_halfway, progress=told, **kwargs)

    monkeypatch.setattr(data_preview, "prepare", shown)  # Start again: it prepares, opens
    click(qtbot, dialog.start_button)
    qtbot.waitUntil(lambda: panel.bar.value() == ROWS, timeout=10_000)
    assert panel.bar.maximum() == 2 * ROWS  # both passes counted
    assert panel.bar_text.text() == f"Checking flowers.csv: {ROWS} of {ROWS} rows"
    seen.set()
    qtbot.waitUntil(lambda: dialog.result() == QDialog.DialogCode.Accepted, timeout=20_000)
    assert panel.preparation.wait(5)
    assert panel.report is not None and panel.report.unit == "rows"
    assert panel.report.train + panel.report.test == ROWS
    assert len(list((tmp_path / "datasets").rglob("meta.json"))) == 1
