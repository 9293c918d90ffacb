"""Paired machines in the app: the main window's list (Remove forgets a key, a switch turns
the feature off), and two app instances where a machine that paired once joins the same
hub's next session without the PIN, and needs it again once the host removed it."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.join_dialog import FORGOTTEN, PIN_HINT, REMEMBERED  # noqa: E402
from computeshare_desktop.service.paired import paired_machines  # noqa: E402
from helpers.ui import answer_box  # noqa: E402
from helpers.app import instance  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402
from helpers.app import host_session, open_join  # noqa: E402



def test_the_paired_machines_card_lists_removes_and_turns_off(qtbot, main_window):
    store = paired_machines("HUBKEY")
    store.remember("K" * 40, "laptop · CPU", "192.168.1.20")
    store.remember("L" * 40, "desk · CUDA", None)
    card = main_window.paired
    card.refresh()
    assert card.list.count() == 2 and card.list.isVisibleTo(main_window)
    assert card.list.item(0).text().startswith("desk · CUDA · this computer · paired ")
    assert "laptop · CPU · 192.168.1.20" in card.list.item(1).text()
    assert not card.remove_button.isEnabled()
    card.list.setCurrentRow(1)
    answer_box(card.question, "Remove", default="Keep machine")  # Remove asks first
    click(qtbot, card.remove_button)
    assert [m.name for m in store.machines()] == ["desk · CUDA"]
    assert "K" * 40 in store.removed()
    assert card.enabled_box.isChecked() and store.enabled
    click(qtbot, card.enabled_box)
    assert not store.enabled and not card.enabled_box.isChecked()


def finished(window) -> bool:
    return window.state.phase == "finished"


@pytest.mark.slow
def test_a_paired_machine_joins_the_next_session_without_the_pin_until_removed(
        qtbot, styled_app, app_config, tmp_path, monkeypatch):
    host_app = instance(qtbot, tmp_path / "host-home", monkeypatch, app_config)
    worker_app = instance(qtbot, tmp_path / "worker-home", monkeypatch, app_config)
    try:
        hub = host_session(qtbot, host_app, tmp_path / "one")
        qtbot.waitUntil(lambda: hub.runner.session is not None, timeout=30_000)
        join = open_join(qtbot, worker_app, hub.runner.session.session_id)
        assert join.hint.text() == PIN_HINT
        type_into(qtbot, join.pin_edit, hub.pin_card.pin)
        click(qtbot, join.join_button)
        qtbot.waitUntil(lambda: len(worker_app.progress_windows) == 1, timeout=30_000)
        qtbot.waitUntil(lambda: finished(hub), timeout=60_000)
        host_app.paired.refresh()
        assert host_app.paired.list.count() == 1  # listed on the host

        # The same hub's next session: a new PIN, and the worker types none
        hub = host_session(qtbot, host_app, tmp_path / "two")
        qtbot.waitUntil(lambda: hub.runner.session is not None, timeout=30_000)
        join = open_join(qtbot, worker_app, hub.runner.session.session_id)
        assert join.hint.text() == REMEMBERED and join.pin_edit.text() == ""
        click(qtbot, join.join_button)
        qtbot.waitUntil(lambda: len(worker_app.progress_windows) == 2, timeout=30_000)
        qtbot.waitUntil(lambda: finished(hub) and hub.workers_table.rowCount() == 1,
                        timeout=60_000)

        # The host removes it: the next session asks for the PIN, and the dialog says so
        host_app.paired.list.setCurrentRow(0)
        answer_box(host_app.paired.question, "Remove", default="Keep machine")
        click(qtbot, host_app.paired.remove_button)
        assert host_app.paired.list.count() == 0
        hub = host_session(qtbot, host_app, tmp_path / "three")
        qtbot.waitUntil(lambda: hub.runner.session is not None, timeout=30_000)
        join = open_join(qtbot, worker_app, hub.runner.session.session_id)
        assert join.hint.text() == REMEMBERED  # it cannot know yet
        click(qtbot, join.join_button)
        qtbot.waitUntil(lambda: join.runner is None and join.message.isVisible(),
                        timeout=30_000)
        assert join.message.text() == FORGOTTEN and join.hint.text() == PIN_HINT
        assert len(worker_app.progress_windows) == 2
        # (with the PIN it pairs again: tests/hub/test_hub_pairing_sessions.py)
    finally:
        for window in (worker_app, host_app):
            window.close()
