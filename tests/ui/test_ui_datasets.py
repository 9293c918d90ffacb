"""Datasets that are not on this computer are marked in the Host dialog, refused there
(before any hub window opens, and not remembered), and can be downloaded with a progress
dialog."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QProgressDialog  # noqa: E402

from computeshare_desktop.data import DownloadProgress, needs_download  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.gui.settings import Settings  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.ui import click  # noqa: E402


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


class SteppedDownload:
    """A fake ``data.download``: it reports each step, then waits until the test has looked
    at the dialog, and finally leaves the set's folder in the cache."""

    def __init__(self, cache, reports: list[DownloadProgress]) -> None:
        self.cache, self.reports = cache, reports
        self.looked = threading.Semaphore(0)
        self.names: list[str] = []

    def __call__(self, name: str, progress) -> None:
        for report in self.reports:
            progress(report)
            if not self.looked.acquire(timeout=10):
                raise TimeoutError("the test never saw this step in the dialog")
        (self.cache / "cifar-10-batches-py").mkdir(parents=True)
        self.names.append(name)


CIFAR_BYTES = 170_498_071


def test_download_shows_bytes_and_then_the_set_is_ready(qtbot, empty_cache, ui_home):
    steps = [DownloadProgress(0, None, "train", 0, "Downloading the train split of cifar10…"),
             DownloadProgress(42_000_000, CIFAR_BYTES, "train", 1, "42.0 of 170.5 MB"),
             DownloadProgress(CIFAR_BYTES, CIFAR_BYTES, "train", 1, "170.5 of 170.5 MB")]
    fake = SteppedDownload(empty_cache, steps)
    dialog = HostDialog(HostOptions(out_dir=str(ui_home / "run")), downloader=fake)
    qtbot.addWidget(dialog)
    dialog.show()
    choose(dialog, "cifar10")
    assert needs_download("cifar10")
    seen: list[tuple[str, int, int, int]] = []

    def look() -> None:  # on the GUI thread, while download_dataset runs its loop
        bar = dialog.findChild(QProgressDialog)
        if bar is None or not bar.isVisible() or bar.labelText() == "Downloading cifar10…":
            return
        if seen and seen[-1][0] == bar.labelText():
            return
        seen.append((bar.labelText(), bar.minimum(), bar.maximum(), bar.value()))
        fake.looked.release()

    timer = QTimer(dialog)
    timer.timeout.connect(look)
    timer.start(10)
    assert dialog.download_dataset()
    timer.stop()
    assert seen == [("Downloading the train split of cifar10…", 0, 0, 0),
                    ("Downloading cifar10 — 42.0 of 170.5 MB", 0, 1000, 246),
                    ("Downloading cifar10 — 170.5 of 170.5 MB", 0, 1000, 1000)]
    assert fake.names == ["cifar10"] and not needs_download("cifar10")
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
