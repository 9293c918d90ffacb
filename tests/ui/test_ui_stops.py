"""Stopping from the GUI: the question first, the model kept, and a worker told at once."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QTimer  # noqa: E402

from computeshare_desktop.gui.formatting import human_pair  # noqa: E402
from computeshare_desktop.gui.kick_question import kick_text  # noqa: E402
from computeshare_desktop.protocol.ports import HubPorts  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.net import PIN as HUB_PIN  # noqa: E402
from helpers.net import RunningHub, free_ports  # noqa: E402
from helpers.ui import click, join_by_address  # noqa: E402
from helpers.ui import answer_box, answer_kick  # noqa: E402


def answer(main_window, button: str, *, never_again: bool = False) -> list[str]:
    """Answer the next stop question with ``button``; the list gets the question's text."""
    return answer_box(main_window.question, button, never_again=never_again)


def test_stop_and_close_ask_first_and_a_stop_keeps_the_model(qtbot, main_window, tmp_path):
    main_window.settings.set_confirm_stop(True)
    out = tmp_path / "run"
    window = main_window.host(HostOptions(rounds=100_000, workers=1, train_here=True,
                                          out_dir=str(out), port=free_ports(), eval_every=0))
    assert window is not None
    qtbot.waitUntil(lambda: window.state.version >= 5, timeout=30_000)

    asked = answer(main_window, "Keep training")
    click(qtbot, window.stop_button)
    assert asked and "Stop this training session" in asked[0]
    assert window.runner.running and not window.runner.stopping

    asked = answer(main_window, "Keep training")
    window.close()
    assert asked and window.isVisible() and window.runner.running  # closing asked too

    asked = answer(main_window, "Stop training", never_again=True)
    click(qtbot, window.stop_button)
    assert asked
    qtbot.waitUntil(lambda: not window.runner.running, timeout=20_000)
    assert window.state.phase == "stopped"
    assert (out / "trained_model.pth").exists() and (out / "checkpoint.pt").exists()
    assert not main_window.settings.confirm_stop()  # "Don't ask again" was ticked


def test_quitting_asks_once_for_every_training_session(qtbot, main_window, tmp_path):
    main_window.settings.set_confirm_stop(True)
    window = main_window.host(HostOptions(rounds=100_000, workers=1, train_here=True,
                                          out_dir=str(tmp_path / "run"), port=free_ports(),
                                          eval_every=0))
    qtbot.waitUntil(lambda: window.state.version >= 3, timeout=30_000)
    asked = answer(main_window, "Keep training")
    main_window.close()
    assert asked and "Quitting stops it" in asked[0] and main_window.isVisible()
    asked = answer(main_window, "Quit")
    main_window.close()
    assert len(asked) == 1 and not main_window.isVisible() and not window.runner.running
    assert (tmp_path / "run" / "trained_model.pth").exists()
    assert (tmp_path / "run" / "checkpoint.pt").exists()


@pytest.mark.parametrize("while_asking", [False, True], ids=["training", "question-open"])
def test_a_signal_stops_and_saves_without_asking(qtbot, main_window, tmp_path, while_asking):
    """SIGTERM (a logout) or Ctrl-C never waits on a question: the model and checkpoint are
    written, even when a stop question is on screen at that moment."""
    import signal

    from PySide6.QtWidgets import QApplication, QMessageBox

    from computeshare_desktop.gui.app import _close_on_signals

    main_window.settings.set_confirm_stop(True)
    out = tmp_path / "run"
    window = main_window.host(HostOptions(rounds=100_000, workers=1, train_here=True,
                                          out_dir=str(out), port=free_ports(), eval_every=0))
    qtbot.waitUntil(lambda: window.state.version >= 3, timeout=30_000)
    saved = {name: signal.getsignal(getattr(signal, name)) for name in ("SIGINT", "SIGTERM")}
    wake = _close_on_signals(main_window)
    signalled = False
    asked_after: list[str] = []

    def keep_training_if_asked() -> None:  # a question after the signal fails the test
        box = QApplication.activeModalWidget()
        if signalled and isinstance(box, QMessageBox):
            asked_after.append(box.text())
            next(b for b in box.buttons() if b.text() == "Keep training").click()

    watch = QTimer()
    watch.timeout.connect(keep_training_if_asked)
    watch.start(50)

    def terminate() -> None:
        nonlocal signalled
        signalled = True
        signal.raise_signal(signal.SIGTERM)
    try:
        if while_asking:
            def terminate_once_asked() -> None:
                if main_window.question.box is None:
                    QTimer.singleShot(20, terminate_once_asked)
                    return
                terminate()
            QTimer.singleShot(20, terminate_once_asked)
            click(qtbot, window.stop_button)  # returns once the signal dismissed the box
        else:
            terminate()
        qtbot.waitUntil(lambda: not main_window.isVisible(), timeout=20_000)
    finally:
        watch.stop()
        wake.stop()
        for name, handler in saved.items():
            signal.signal(getattr(signal, name), handler)
    assert asked_after == [] and main_window.question.box is None
    assert not window.runner.running
    assert (out / "trained_model.pth").exists() and (out / "checkpoint.pt").exists()
    assert main_window.settings.confirm_stop()  # nobody answered "don't ask again"


def test_a_worker_window_shows_a_banner_within_2_s_when_the_hub_stops(
        qtbot, main_window, tmp_path):
    hub = RunningHub(tmp_path / "hub", workers=1, rounds=100_000, batch_size=8, eval_every=0)
    try:
        window = join_by_address(qtbot, main_window, hub.port, HUB_PIN)
        qtbot.waitUntil(lambda: window.state.version >= 5, timeout=30_000)
        assert not window.banner.isVisible()
        # its traffic cards count its own channel's bytes (they once read 0 B / 0 B)
        qtbot.waitUntil(lambda: window.state.bandwidth() > 0, timeout=5_000)
        assert window.state.bytes_sent > 0 and window.state.bytes_received > 0
        assert window.cards["traffic"].value.text() != human_pair(0, 0)
        hub.stop.set()
        stopped = time.monotonic()
        qtbot.waitUntil(lambda: window.banner.isVisible(), timeout=2_000)
        assert time.monotonic() - stopped < 2.0
        assert "stopped the session" in window.banner.text()
        assert window.banner.property("level") == "error"
        qtbot.waitUntil(lambda: not window.runner.running, timeout=5_000)
        assert window.state.phase == "stopped" and window.chip.text() == "Stopped"
    finally:
        hub.close()


def test_a_worker_window_warns_within_10_s_when_the_hub_vanishes(qtbot, main_window, tmp_path):
    """A hub killed without a word (kill -9, a power cut): an amber banner within 10 s, and
    the worker keeps trying (a resumed hub would get it back)."""
    import socket

    from helpers.net import cli, wait_for

    def listening() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", HubPorts.at(port).pairing)) == 0

    port = free_ports()
    hub = cli("host", "--pin", HUB_PIN, "--bind", "127.0.0.1", "--port", str(port), "--out",
              str(tmp_path / "hub"), "--quiet", "--workers", "1", "--rounds", "100000",
              "--eval-every", "0", "--batch-size", "8")
    try:
        wait_for(listening, 60, "the hub to listen")
        window = join_by_address(qtbot, main_window, port, HUB_PIN)
        qtbot.waitUntil(lambda: window.state.version >= 5, timeout=60_000)
        assert not window.banner.isVisible()
        hub.kill()  # no goodbye (SIGKILL; TerminateProcess on Windows)
        killed = time.monotonic()
        qtbot.waitUntil(lambda: window.banner.isVisible(), timeout=10_000)
        assert time.monotonic() - killed < 10.0
        assert "has not answered" in window.banner.text()
        assert window.banner.property("level") == "warning"
        assert window.runner.running  # still trying
    finally:
        if hub.poll() is None:
            hub.kill()
        hub.communicate()


def test_kick_a_worker_from_its_row_and_rotate_the_pin(qtbot, main_window, tmp_path):
    from PySide6.QtWidgets import QApplication, QMenu

    from computeshare_desktop.errors import RejectedError
    from computeshare_desktop.protocol import RejectCode
    from helpers.net import WorkerThread, pair
    from computeshare_desktop.transport import Identity

    window = main_window.host(HostOptions(rounds=100_000, workers=2, train_here=True,
                                          out_dir=str(tmp_path / "run"), port=free_ports(),
                                          eval_every=0))
    qtbot.waitUntil(lambda: window.runner.port is not None, timeout=20_000)
    port = window.runner.port
    guest = WorkerThread(port, "guest", pin=window.pin_card.pin)
    try:
        qtbot.waitUntil(lambda: window.state.version >= 3, timeout=30_000)
        table = window.workers_table
        qtbot.waitUntil(lambda: table.rowCount() == 2, timeout=5_000)
        row = next(r for r in range(2) if table.item(r, 0).text() == "guest")
        assert not window.kick_button.isEnabled()
        table.selectRow(row)
        assert window.kick_button.isEnabled()
        # the row's context menu offers the same
        offered: list[list[str]] = []

        def choose() -> None:
            menu = QApplication.activePopupWidget()
            if not isinstance(menu, QMenu):
                QTimer.singleShot(20, choose)
                return
            offered.append([a.text() for a in menu.actions()])
            menu.actions()[0].trigger()
            menu.close()
        kicked = []
        table.kick_requested.connect(kicked.append)
        table.kick_requested.disconnect(window.kick)  # the menu alone, then the button
        QTimer.singleShot(100, choose)
        table._menu(table.visualItemRect(table.item(row, 0)).center())
        assert offered == [["Remove from the session…"]] and kicked == [table.kickable_at(row)]
        asked = answer_kick(window, "Keep worker")  # the default: nothing happens
        click(qtbot, window.kick_button)
        assert asked == [kick_text("guest", others=1)]
        assert guest.thread.is_alive() and window.kick_button.isEnabled()
        asked = answer_kick(window, "Remove")
        click(qtbot, window.kick_button)
        assert asked
        guest.join(30)
        assert isinstance(guest.error, RejectedError) and guest.error.code is RejectCode.BANNED
        state = table.columnCount() - 1
        qtbot.waitUntil(lambda: table.item(row, state).text() == "Removed by the host",
                        timeout=5_000)
        again = WorkerThread(port, "guest", pin=window.pin_card.pin, identity=guest.identity)
        again.join(30)
        assert again.error.code is RejectCode.BANNED  # a kick is a ban for the session

        old = window.pin_card.pin
        click(qtbot, window.pin_card.new_button)
        new = window.pin_card.pin
        assert new != old and window.pin_card.digits.text().replace(" ", "") == new
        time.sleep(0.3)  # the hub's loop takes the new PIN
        assert pair(port, old, "late", Identity.generate())[0].code == "BAD_PIN"
        assert pair(port, new, "late", Identity.generate())[1] is not None
    finally:
        guest.close()
        window.runner.stop()
