"""Closing the main window mid-training leaves nothing behind: no thread, process, socket or
mDNS advertisement."""

from __future__ import annotations

import os
import threading
import time

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.discovery import SessionBrowser  # noqa: E402
from computeshare_desktop.gui.main_window import MainWindow  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from computeshare_desktop.gui.settings import Settings  # noqa: E402
from helpers.net import free_ports, wait_for  # noqa: E402

SESSION = "ui-shutdown-session"
PROCESS_WIDE = {"zmq.utils.garbage"}  # pyzmq's zero-copy collector lives for the process


def open_sockets() -> int:
    """Socket file descriptors this process holds."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return count


def our_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()
            and type(t).__module__ not in PROCESS_WIDE}


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts sockets in /proc")
def test_closing_the_window_stops_everything_and_withdraws_the_advert(
        qtbot, styled_app, ui_home, app_config, tmp_path):
    with SessionBrowser(interfaces=["127.0.0.1"]) as browser:
        time.sleep(0.2)
        threads_before, sockets_before = our_threads(), open_sockets()
        settings = Settings()
        settings.set_confirm_stop(False)  # (the question itself: test_ui_stops)
        window = MainWindow(settings, app_config)
        window.show()
        progress = window.host(HostOptions(name=SESSION, rounds=100_000, workers=1,
                                           train_here=True, out_dir=str(tmp_path / "run"),
                                           port=free_ports()))
        assert progress is not None
        qtbot.waitUntil(lambda: progress.state.version >= 5, timeout=30_000)
        wait_for(lambda: any(s.name == SESSION for s in browser.sessions()), 15, "the advert")
        assert len(our_threads()) > len(threads_before) and open_sockets() > sockets_before

        started = time.monotonic()
        window.close()
        closing_s = time.monotonic() - started
        assert not window.isVisible() and not progress.isVisible()
        assert our_threads() == threads_before, our_threads() - threads_before
        assert window.runners == []
        wait_for(lambda: open_sockets() <= sockets_before, 5, "the sockets to close")
        wait_for(lambda: not any(s.name == SESSION for s in browser.sessions()), 5,
                 "the advert to be withdrawn")
        print(f"closed a training session in {closing_s:.2f} s")
        assert closing_s < 10
