"""Datasets that are not on this computer are marked in the Host dialog, refused there
(before any hub window opens, and not remembered), and can be downloaded with a progress
dialog."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.data import needs_download  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.gui.settings import Settings  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from ui_helpers import click  # noqa: E402


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    cache = tmp_path / "datasets"
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(cache))
    return cache


def choose(dialog: HostDialog, name: str) -> None:
    dialog.dataset.setCurrentIndex(dialog.dataset.findData(name))


def test_missing_sets_are_marked_and_refused_in_the_dialog(qtbot, main_window, empty_cache):
    click(qtbot, main_window.host_button)
    dialog = main_window.host_dialog
    qtbot.waitUntil(dialog.isVisible)
    labels = {dialog.dataset.itemData(i): dialog.dataset.itemText(i)
              for i in range(dialog.dataset.count())}
    assert labels["mnist-sample"] == "mnist-sample"
    assert labels["cifar10"] == "cifar10 — download needed"
    assert not dialog.download_button.isVisible()
    choose(dialog, "cifar10")
    assert dialog.download_button.isVisible()

    click(qtbot, dialog.start_button)
    assert dialog.isVisible() and main_window.progress_windows == []
    assert "cifar10 is not on this computer" in dialog.error.text()
    assert Settings().host_options().dataset != "cifar10"  # a refused start is not kept


def test_download_shows_progress_and_then_the_set_is_ready(qtbot, empty_cache, ui_home):
    calls: list[str] = []

    def fake_download(name, progress):  # what data.download does, without the internet
        progress(0, "train")
        progress(1, "test")
        (empty_cache / "cifar-10-batches-py").mkdir(parents=True)
        calls.append(name)

    dialog = HostDialog(HostOptions(out_dir=str(ui_home / "run")), downloader=fake_download)
    qtbot.addWidget(dialog)
    dialog.show()
    choose(dialog, "cifar10")
    assert needs_download("cifar10")
    assert dialog.download_dataset()
    assert calls == ["cifar10"] and not needs_download("cifar10")
    assert dialog.dataset.currentText() == "cifar10" and not dialog.download_button.isVisible()


def test_a_failed_download_says_why(qtbot, empty_cache, ui_home):
    def offline(name, progress):
        raise OSError("no route to host")

    dialog = HostDialog(HostOptions(out_dir=str(ui_home / "run")), downloader=offline)
    qtbot.addWidget(dialog)
    dialog.show()
    choose(dialog, "svhn")
    assert not dialog.download_dataset()
    assert "Could not download svhn" in dialog.error.text() and dialog.error.isVisible()
