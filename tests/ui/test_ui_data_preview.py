"""The Host dialog's data panel, on real widgets: a folder of images or a table previewed
before the session opens, and a folder's preparation cancelled from its bar."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PIL import Image  # noqa: E402
from PySide6.QtCore import QPoint  # noqa: E402
from PySide6.QtWidgets import QDialog  # noqa: E402

from computeshare_desktop.gui import data_preview  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.ui import click, screenshot_dir, type_into  # noqa: E402


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch, styled_app):  # the app's style: its button sizes
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "datasets"))


def write_pets(root: Path, counts: dict[str, int]) -> Path:
    """Class folders of 24×20 PNGs, a damaged .png, a stray file and an empty class."""
    rng = np.random.default_rng(0)
    for tint, (name, count) in enumerate(counts.items()):
        (root / name).mkdir(parents=True)
        for i in range(count):
            pixels = rng.integers(0, 120, (20, 24, 3), dtype=np.uint8)
            pixels[..., tint % 3] += np.uint8(120)  # each class its colour
            Image.fromarray(pixels).save(root / name / f"{i:03d}.png")
    (root / "cat" / "broken.png").write_bytes(b"not a png")
    (root / "dog" / "notes.txt").write_text("hello", encoding="utf-8")
    (root / "empty").mkdir()
    return root


def open_dialog(qtbot, tmp_path) -> HostDialog:
    dialog = HostDialog(HostOptions(out_dir=str(tmp_path / "run")))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    return dialog


def preview(qtbot, dialog: HostDialog, spec: Path) -> None:
    """Type ``spec`` into the dataset field as a person would, and wait for the panel."""
    line = dialog.dataset.lineEdit()
    type_into(qtbot, line, str(spec))
    panel = dialog.data_panel
    qtbot.waitUntil(lambda: panel.shown is not None and panel.spec == str(spec),
                    timeout=10_000)
    assert panel.previews.wait(5)


def test_a_folder_shows_its_classes_thumbnails_size_and_skips(qtbot, tmp_path):
    dialog = open_dialog(qtbot, tmp_path)
    low, narrow = dialog.minimumSizeHint().height(), dialog.width()
    assert not dialog.data_panel.isVisible()
    preview(qtbot, dialog, write_pets(tmp_path / "pets", {"cat": 6, "dog": 5}))
    panel = dialog.data_panel
    assert panel.isVisible() and panel.heading.text() == "pets — image folder"
    # The dialog kept room for the panel: all its width shows (its step scrolls up and
    # down), and the dialog is no wider for it.
    assert dialog.width() == narrow and panel.width() == data_preview.PANEL_WIDTH
    left = panel.mapTo(dialog, QPoint(0, 0)).x()
    assert 0 <= left and left + panel.width() <= dialog.width()
    assert panel.classes.text() == "Classes: cat 6 · dog 5"
    assert "11 images" in panel.summary.text()
    assert [not t.pixmap().isNull() for t in panel.thumbs] == [True] * 8
    assert panel.train_size.text() == "Trains at 24×20 (their own size)"
    skipped = panel.skipped.text()
    assert "empty/" in skipped and "dog/notes.txt" in skipped and "cat/broken.png" in skipped
    assert dialog.image_size.isVisible() and not panel.table.isVisible()
    assert not dialog.label_column.isVisible()  # a table's option
    # The panel sits at the side, and the row's Folder… and File… are no taller than the
    # dataset field: the dialog's minimum height does not grow.
    assert dialog.minimumSizeHint().height() == low
    row = dialog.dataset.sizeHint().height()
    assert dialog.data.folder_button.minimumSizeHint().height() <= row

    path = screenshot_dir(tmp_path) / "host-dialog-data.png"  # for a person to look at
    assert dialog.grab().save(str(path))

    type_into(qtbot, dialog.dataset.lineEdit(), "mnist-sample")  # a built-in: no panel
    qtbot.waitUntil(lambda: not panel.isVisible(), timeout=5_000)
    assert dialog.width() == narrow


def test_a_small_folder_shows_the_thumbnails_it_has(qtbot, tmp_path):
    dialog = open_dialog(qtbot, tmp_path)
    preview(qtbot, dialog, write_pets(tmp_path / "few", {"cat": 2, "dog": 2}))
    shown = [t for t in dialog.data_panel.thumbs if not t.pixmap().isNull()]
    assert len(shown) == 4  # the damaged file is passed by


def test_a_csv_shows_its_first_rows_and_label_counts(qtbot, tmp_path):
    table = tmp_path / "flowers.csv"
    rows = [f"{i},{i * 0.5},{'rose' if i % 3 else 'tulip'}" for i in range(9)]
    table.write_text("length,width,kind\n" + "\n".join(rows) + "\n", encoding="utf-8")
    dialog = open_dialog(qtbot, tmp_path)
    preview(qtbot, dialog, table)
    panel = dialog.data_panel
    assert panel.heading.text() == "flowers.csv — table"
    assert panel.table.isVisible() and panel.table.rowCount() == 5
    assert [panel.table.horizontalHeaderItem(c).text() for c in range(3)] == [
        "length", "width", "kind"]
    assert panel.table.item(1, 2).text() == "rose"
    assert panel.classes.text() == "Label values: rose 6 · tulip 3"
    assert panel.train_size.text() == "Label column: kind"
    assert not dialog.image_size.isVisible()  # a folder's option
    assert panel.isAncestorOf(dialog.label_column) and dialog.label_column.isVisible()
    type_into(qtbot, dialog.label_column, "width")  # previewed again with that label
    qtbot.waitUntil(lambda: panel.train_size.text() == "Label column: width", timeout=5_000)
    assert panel.previews.wait(5)
    assert panel.classes.text().startswith("Label values: 0.0 1 · 0.5 1")


def test_cancel_stops_the_preparation_keeps_nothing_and_the_dialog_works(
        qtbot, tmp_path, monkeypatch):
    folder = write_pets(tmp_path / "pets", {"cat": 6, "dog": 5})
    real = data_preview.prepare
    asked = threading.Event()

    def held(spec, *, cancel, **kwargs):
        def wait_for_cancel() -> bool:  # the first image waits until Cancel is clicked
            asked.set()
            deadline = time.monotonic() + 10
            while not cancel() and time.monotonic() < deadline:
                time.sleep(0.01)
            return cancel()
        return real(spec, cancel=wait_for_cancel, **kwargs)

    monkeypatch.setattr(data_preview, "prepare", held)
    dialog = open_dialog(qtbot, tmp_path)
    preview(qtbot, dialog, folder)
    panel = dialog.data_panel
    click(qtbot, dialog.start_button)
    qtbot.waitUntil(lambda: panel.bar.isVisible() and asked.is_set(), timeout=10_000)
    assert not dialog.start_button.isEnabled()
    click(qtbot, panel.cancel_button)
    qtbot.waitUntil(lambda: not panel.preparing, timeout=10_000)
    assert panel.preparation.wait(5)
    assert dialog.isVisible() and dialog.start_button.isEnabled()
    assert "cancelled" in dialog.error.text() and not panel.bar.isVisible()
    assert not list((tmp_path / "datasets").rglob("meta.json"))  # no cache was kept

    monkeypatch.setattr(data_preview, "prepare", real)  # Start again: it prepares and opens
    click(qtbot, dialog.start_button)
    qtbot.waitUntil(lambda: dialog.result() == QDialog.DialogCode.Accepted, timeout=20_000)
    assert panel.preparation.wait(5)
    assert panel.report is not None and panel.report.train + panel.report.test == 11
    assert any("broken.png" in line for line in panel.report.skipped)
    assert len(list((tmp_path / "datasets").rglob("meta.json"))) == 1
