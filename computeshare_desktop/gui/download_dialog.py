"""A dataset download with a progress dialog: bytes received of the total, on a bar that
stays responsive while the download runs on its own thread."""

from __future__ import annotations

import queue
import threading
from typing import Callable

from PySide6.QtCore import QEventLoop
from PySide6.QtWidgets import QApplication, QProgressDialog, QWidget

from ..data import DownloadProgress

# (name, progress): fetches a dataset, reporting to progress on its own thread
Downloader = Callable[[str, Callable[[DownloadProgress], None]], None]
BAR_STEPS = 1000  # a download's bar runs 0..BAR_STEPS: bytes scaled so any size fits an int


def _download_dialog(name: str, parent: QWidget) -> QProgressDialog:
    """A busy bar until a size is known; it stays open at 100 %, since the total may grow."""
    dialog = QProgressDialog(f"Downloading {name}…", "Cancel", 0, 0, parent)
    dialog.setWindowTitle("Download a dataset")
    dialog.setAutoReset(False)
    dialog.setAutoClose(False)
    dialog.setMinimumDuration(0)
    dialog.setValue(0)
    return dialog


def show_download(dialog: QProgressDialog, name: str, report: DownloadProgress) -> None:
    """Show the bytes received of the total ("Downloading cifar10 — 42.0 of 170.5 MB")."""
    total = report.total_bytes
    if total is None or total <= 0:
        dialog.setRange(0, 0)
    else:
        dialog.setRange(0, BAR_STEPS)
        dialog.setValue(min(BAR_STEPS, report.done_bytes * BAR_STEPS // total))
    dialog.setLabelText(f"Downloading {name} — {report.amount()}" if report.file
                        else report.text)


def _show_latest(dialog: QProgressDialog, name: str,
                 reports: queue.SimpleQueue[DownloadProgress]) -> None:
    """Show the newest report; older ones waiting in the queue are already stale."""
    latest = None
    while not reports.empty():
        latest = reports.get()
    if latest is not None:
        show_download(dialog, name, latest)


def run_download(name: str, downloader: Downloader,
                 parent: QWidget) -> tuple[bool, BaseException | None]:
    """Fetch ``name`` with ``downloader`` on a thread while a progress dialog shows it.
    Returns (finished, error): finished is False when the user cancelled while the
    download went on (it keeps running in the background)."""
    progress = _download_dialog(name, parent)
    reports: queue.SimpleQueue[DownloadProgress] = queue.SimpleQueue()
    result: list[BaseException | None] = []

    def fetch() -> None:
        try:
            downloader(name, reports.put)
            result.append(None)
        except BaseException as exc:  # shown by the caller, on the GUI thread
            result.append(exc)

    thread = threading.Thread(target=fetch, name="dataset-download", daemon=True)
    thread.start()
    while thread.is_alive() and not progress.wasCanceled():
        _show_latest(progress, name, reports)
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        thread.join(0.05)
    progress.close()
    if progress.wasCanceled() and thread.is_alive():
        return False, None
    return True, result[0] if result else None
