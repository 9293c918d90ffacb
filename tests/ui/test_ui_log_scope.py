"""Each progress window's log shows its own session's messages only: a worker of this app
that waits for a shard does not write into the hub window of the same app."""

from __future__ import annotations

import logging
import threading

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.sources import LogTap  # noqa: E402
from helpers.app import fill_host_dialog  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402

log = logging.getLogger("computeshare_desktop.tests")


def test_a_tap_keeps_to_the_threads_of_its_scope():
    tap = LogTap("cs-hub-7").attach()
    try:
        def say(thread_name: str, text: str) -> None:
            thread = threading.Thread(target=log.warning, args=(text,), name=thread_name)
            thread.start()
            thread.join()

        say("cs-hub-7", "from the hub")
        say("cs-hub-7/eval", "from its evaluation")
        say("cs-hub-7/local/heartbeat", "from its own worker")
        say("cs-worker-8", "from another session")
        say("cs-hub-70", "from a session whose name starts the same")
        assert tap.take() == ["from the hub", "from its evaluation", "from its own worker"]
    finally:
        tap.detach()


@pytest.mark.slow
def test_a_workers_warnings_stay_out_of_the_hub_window_of_the_same_app(
        qtbot, main_window, tmp_path):
    click(qtbot, main_window.host_button)
    dialog = main_window.host_dialog
    qtbot.waitUntil(dialog.isVisible)
    fill_host_dialog(qtbot, dialog, out=tmp_path / "run", rounds=100_000, eval_every=0)
    click(qtbot, dialog.start_button)
    hub_window = main_window.progress_windows[0]
    qtbot.waitUntil(lambda: hub_window.state.phase == "training", timeout=60_000)

    click(qtbot, main_window.connect_button)  # a second worker: the only shard is taken
    join = main_window.join_dialog
    qtbot.waitUntil(join.isVisible)
    type_into(qtbot, join.address_edit, f"127.0.0.1:{hub_window.state.port}")
    type_into(qtbot, join.pin_edit, hub_window.pin_card.pin)
    click(qtbot, join.join_button)
    qtbot.waitUntil(lambda: len(main_window.progress_windows) == 2, timeout=30_000)
    worker_window = main_window.progress_windows[1]
    qtbot.waitUntil(lambda: "session is full" in worker_window.log_pane.toPlainText(),
                    timeout=30_000)
    qtbot.wait(500)  # two more refreshes of the hub window
    assert "session is full" not in hub_window.log_pane.toPlainText()
    assert "Hub listening" in hub_window.log_pane.toPlainText()
