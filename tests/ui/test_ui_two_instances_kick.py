"""A removed machine's whole story, with two app instances (a host and a worker, each with
its own settings, as on two computers), driven through their windows:

the host removes the only worker (the question says so, and its default keeps it); the
worker's window ends with the plain fact; the host's window lists it under Removed machines;
the worker's session list shows the session as it is (waiting for workers); a join with the
right PIN hears the truth (this session: no; the next one: yes) and its Join dialog says so;
Allow again lets it back with the PIN; removed again with "Block this machine", it is
refused by the host's next session too, whose window lists it from the start, until the
host allows it again there."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.join_dialog import REMOVED_HINTS  # noqa: E402
from computeshare_desktop.gui.kick_question import kick_text  # noqa: E402
from computeshare_desktop.gui.session_table import COLUMNS  # noqa: E402
from computeshare_desktop.gui.words import refusal  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.net import free_ports  # noqa: E402
from helpers.app import instance  # noqa: E402
from helpers.ui import answer_kick  # noqa: E402
from helpers.ui import click, click_row, connect_to  # noqa: E402

SESSION = "Kick story"


def hosting(host_app, folder, port: int):
    window = host_app.host(HostOptions(rounds=100_000, workers=1, train_here=False,
                                       out_dir=str(folder), port=port, eval_every=0,
                                       name=SESSION))
    assert window is not None
    return window


def joined(qtbot, worker_app, port: int, pin: str):
    """Join through the Connect dialog; the new progress window."""
    before = list(worker_app.progress_windows)
    connect_to(qtbot, worker_app, port, pin)
    qtbot.waitUntil(lambda: any(w not in before for w in worker_app.progress_windows),
                    timeout=30_000)
    return next(w for w in worker_app.progress_windows if w not in before)


def refused_with(qtbot, worker_app, port: int, pin: str, code: str, how: str) -> None:
    """A join with the right PIN is refused with ``code``'s sentence, and the dialog's hint
    says what holds for this machine."""
    dialog = connect_to(qtbot, worker_app, port, pin)
    qtbot.waitUntil(lambda: dialog.runner is None and bool(dialog.message.text()),
                    timeout=30_000)
    assert dialog.message.text() == refusal(code) and f"({code})" not in dialog.message.text()
    assert dialog.hint.text() == REMOVED_HINTS[how]
    assert not [w for w in worker_app.progress_windows if w.runner.running]
    dialog.reject()


def remove(qtbot, hub_window, *, block: bool) -> str:
    table = hub_window.workers_table
    qtbot.waitUntil(lambda: any(table.kickable_at(r) is not None
                                for r in range(table.rowCount())), timeout=30_000)
    row = next(r for r in range(table.rowCount()) if table.kickable_at(r) is not None)
    click_row(qtbot, table, row)
    name = table.item(row, 0).text()
    asked = answer_kick(hub_window, "Remove", block=block)
    click(qtbot, hub_window.kick_button)
    assert asked == [kick_text(name, others=0)] and "only worker" in asked[0]
    return name


def allow_again(qtbot, hub_window, name: str, blocked: bool) -> None:
    card = hub_window.removed_card
    qtbot.waitUntil(lambda: not card.isHidden() and card.list.count() == 1, timeout=10_000)
    line = card.list.item(0).text()
    assert line.startswith(name) and (("blocked from your sessions" in line) is blocked)
    card.list.item(0).setSelected(True)
    click(qtbot, card.allow_button)
    assert card.isHidden()
    qtbot.waitUntil(lambda: f"{name} may join again with the PIN."
                    in hub_window.log_pane.toPlainText(), timeout=5_000)


def session_state(worker_app) -> str:
    model = worker_app.model
    row = model.row_of_name(SESSION)
    return model.data(model.index(row, COLUMNS.index("State"))) if row >= 0 else ""


@pytest.mark.slow
def test_a_kicked_machines_whole_story(qtbot, styled_app, app_config, tmp_path, monkeypatch):
    host_app = instance(qtbot, tmp_path / "host-home", monkeypatch, app_config)
    worker_app = instance(qtbot, tmp_path / "worker-home", monkeypatch, app_config)
    port = free_ports()
    try:
        hub_window = hosting(host_app, tmp_path / "one", port)
        qtbot.waitUntil(lambda: hub_window.runner.port is not None, timeout=20_000)
        pin = hub_window.pin_card.pin
        worker_window = joined(qtbot, worker_app, port, pin)
        qtbot.waitUntil(lambda: hub_window.state.version >= 3, timeout=30_000)
        assert hub_window.removed_card.isHidden()

        name = remove(qtbot, hub_window, block=False)  # removed from this session
        qtbot.waitUntil(lambda: not worker_window.runner.running, timeout=10_000)
        worker_window.refresh()
        assert worker_window.banner.text() == refusal("BANNED")
        assert worker_window.chip.text() == "Stopped"
        assert "Error" not in worker_window.log_pane.toPlainText()
        qtbot.waitUntil(lambda: session_state(worker_app).startswith("Waiting for workers"),
                        timeout=20_000)  # the session as it is, not "Training" for ever
        worker_window.close()
        refused_with(qtbot, worker_app, port, pin, "BANNED", "removed")

        allow_again(qtbot, hub_window, name, blocked=False)
        worker_window = joined(qtbot, worker_app, port, pin)  # back, with the PIN
        qtbot.waitUntil(lambda: worker_window.state.phase == "training", timeout=30_000)

        remove(qtbot, hub_window, block=True)  # and now blocked
        qtbot.waitUntil(lambda: not worker_window.runner.running, timeout=10_000)
        worker_window.refresh()
        assert worker_window.banner.text() == refusal("BLOCKED")
        worker_window.close()
        click(qtbot, hub_window.stop_button)
        qtbot.waitUntil(lambda: not hub_window.runner.running, timeout=60_000)

        later = hosting(host_app, tmp_path / "two", port)  # the host's next session
        qtbot.waitUntil(lambda: later.runner.port is not None, timeout=20_000)
        later.refresh()
        assert not later.removed_card.isHidden()  # listed from the start
        refused_with(qtbot, worker_app, port, later.pin_card.pin, "BLOCKED", "blocked")
        allow_again(qtbot, later, name, blocked=True)
        worker_window = joined(qtbot, worker_app, port, later.pin_card.pin)
        qtbot.waitUntil(lambda: worker_window.state.phase == "training", timeout=30_000)
    finally:
        for app in (worker_app, host_app):
            for window in list(app.progress_windows):
                if window.runner.running:
                    window.runner.stop()
                    window.runner.join(30)
            app.close()
