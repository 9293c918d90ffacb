"""Start in the Host dialog answers at once for a built-in dataset that is not here yet (a
quick look, no torchvision import: the first press froze ~7.5 s), and shows that it is busy
while it loads one that seems here: Start disabled, reading "Preparing…", a busy cursor."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from computeshare_desktop.data.factory import CACHED_AS  # noqa: E402
from computeshare_desktop.gui import host_dialog  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.ui import click  # noqa: E402


def test_start_says_at_once_a_dataset_is_missing_and_is_busy_while_loading_one(
        qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "datasets"))
    loads = []

    def loading(name, **_):  # what the user sees while the dataset loads
        cursor = QApplication.overrideCursor()
        loads.append((name, dialog.start_button.text(), dialog.start_button.isEnabled(),
                      cursor.shape() if cursor is not None else None))
        return False

    monkeypatch.setattr(host_dialog, "is_available", loading)
    dialog = HostDialog(HostOptions(dataset="cifar10", out_dir=str(tmp_path / "run")))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    label = dialog.start_button.text()
    click(qtbot, dialog.start_button)
    assert loads == [] and "cifar10 is not on this computer yet" in dialog.error.text()

    (tmp_path / "datasets" / CACHED_AS["cifar10"]).mkdir(parents=True)  # seems here
    click(qtbot, dialog.start_button)
    assert loads == [("cifar10", "Preparing…", False, Qt.CursorShape.WaitCursor)]
    assert "cifar10 is not on this computer yet" in dialog.error.text()
    assert (dialog.start_button.text(), dialog.start_button.isEnabled()) == (label, True)
    assert QApplication.overrideCursor() is None and dialog.isVisible()
