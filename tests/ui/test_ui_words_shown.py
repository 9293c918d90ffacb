"""What reaches a window goes through gui/words.py: a worker row that
refused the model reads "Refused the model", not ``model_refused``; the hub's own summary of
refused requests reaches the log pane as a sentence with no code, no "[hub v21]" tag and no
"peer"; a kicked machine's window says so without "(BANNED)"."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.events import (Failed, Listening, StateChanged,  # noqa: E402
                                         WorkerInfo, WorkerJoined, WorkerLeft, WorkerReady)
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.hub.rejects import RejectLog  # noqa: E402
from computeshare_desktop.protocol import RejectCode  # noqa: E402
from computeshare_desktop.service import Tagged  # noqa: E402
from computeshare_desktop.service.messages import refusal_message  # noqa: E402
from helpers.ui import Scripted  # noqa: E402

SCOPE = "words-shown-test"


def window_for(qtbot, role: str) -> tuple[ProgressWindow, Scripted]:
    runner = Scripted(SCOPE)
    window = ProgressWindow(runner, ProgressState(role, total_rounds=100, expected_workers=2,
                                                  name="t"),
                            title="t", subtitle="s", refresh_ms=10_000)
    qtbot.addWidget(window)
    return window, runner


def test_a_row_that_refused_the_model_reads_the_human_text(qtbot):
    window, runner = window_for(qtbot, "hub")
    one, two = WorkerInfo(1, "laptop", "CPU", 0), WorkerInfo(2, "pc", "CPU", 1)
    runner.script = [Tagged("hub", e) for e in (
        Listening("127.0.0.1", 7341, 7342, 7343, "ab" * 8, ("127.0.0.1",), "/out"),
        WorkerJoined(one), WorkerReady(one), WorkerJoined(two), StateChanged("training"),
        WorkerLeft(two, "model_refused"), WorkerLeft(one, "silent"))]
    window.refresh()
    table = window.workers_table
    table.show_rows(list(window.state.workers.values()), window.state.clock())
    state = table.columnCount() - 1
    assert [table.item(r, state).text() for r in range(2)] == ["Not answering",
                                                               "Refused the model"]
    shown = window.log_pane.toPlainText()
    assert "model_refused" not in shown and "silent" not in shown


def test_the_hubs_refusal_summary_is_a_sentence_in_the_log_pane(qtbot):
    window, _ = window_for(qtbot, "hub")
    log = RejectLog()

    def hub_thread() -> None:  # the window's log tap hears its own session's threads only
        log.note(RejectCode.BAD_PIN, bytes.fromhex("00257130ff"), "wrong PIN", 0.0, 21)
        log.note(RejectCode.NOT_PAIRED, bytes.fromhex("00257130ff"), "", 1.0, 21)
        log.flush(100.0, 21)

    thread = threading.Thread(target=hub_thread, name=f"{SCOPE}/hub")
    thread.start()
    thread.join(5)
    window.refresh()
    shown = window.log_pane.toPlainText()
    assert "Refused 1 request: 1 with a wrong PIN." in shown
    assert "Refused 1 request: 1 from a machine that is not paired." in shown
    for raw in ("BAD_PIN", "NOT_PAIRED", "[hub", "peer", "×"):
        assert raw not in shown, raw


def test_a_kicked_machines_window_says_it_without_the_code(qtbot):
    window, runner = window_for(qtbot, "worker")
    runner.script = [Tagged("worker", Failed(refusal_message("BANNED"), "BANNED"))]
    window.refresh()
    assert window.banner.text().startswith("The host removed this machine from this session")
    assert "BANNED" not in window.banner.text() + window.log_pane.toPlainText()
    assert window.chip.text() == "Stopped"
