"""The Join dialog after the host removed this machine: no promise of joining without the
PIN, and the reason the PIN is asked for again (issue 20 trial, item 6)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.events import Ended, Failed  # noqa: E402
from computeshare_desktop.gui.join_dialog import (PIN_HINT, REMEMBERED,  # noqa: E402
                                                  REMOVED_HINT, JoinDialog)
from computeshare_desktop.service import (JoinPlan, JoinService, JoinTarget,  # noqa: E402
                                          Tagged, remembers)
from computeshare_desktop.service.join import removals  # noqa: E402
from computeshare_desktop.service.options import worker_name  # noqa: E402
from computeshare_desktop.transport import KnownHubs, identity_path  # noqa: E402
from ui_helpers import click, type_into  # noqa: E402

TARGET = JoinTarget.from_address("127.0.0.1:9")  # nothing listens; nothing is started
HUB_KEY = "hub-key-of-the-test"


class Scripted(JoinService):
    """A JoinService that never starts its thread: the dialog drains ``script``."""

    def __init__(self, plan: JoinPlan, script: list[Tagged]) -> None:
        super().__init__(plan)
        self.script = script

    def start(self) -> "Scripted":
        return self

    def drain(self) -> list[Tagged]:
        events, self.script = self.script, []
        return events


def dialog_for(qtbot, script: list[Tagged] | None = None) -> JoinDialog:
    dialog = JoinDialog(TARGET, lambda t, pin: Scripted(JoinPlan(t, pin=pin), script or []),
                        remembered=lambda t: remembers(t, worker_name()), refresh_ms=10)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def test_a_removed_machines_join_dialog_asks_for_the_pin_and_says_why(qtbot, ui_home):
    key_file = identity_path("worker", worker_name())
    KnownHubs(key_file).remember(HUB_KEY, f"{TARGET.host}:{TARGET.port}")
    assert dialog_for(qtbot).hint.text() == REMEMBERED  # paired before: no PIN needed

    # the host removed it: the service forgot the key and noted why (test_join_memory.py)
    KnownHubs(key_file).forget(HUB_KEY)
    removals(key_file).remember(HUB_KEY, f"{TARGET.host}:{TARGET.port}")
    dialog = dialog_for(qtbot)
    assert dialog.hint.text() == REMOVED_HINT and "PIN" in REMOVED_HINT
    click(qtbot, dialog.join_button)  # no PIN typed: asked for it
    assert "PIN" in dialog.message.text() and dialog.runner is None

    removals(key_file).forget(HUB_KEY)  # paired again since: the plain hint
    assert dialog_for(qtbot).hint.text() == PIN_HINT


def test_the_dialog_that_hears_the_removal_drops_its_promise(qtbot, ui_home):
    KnownHubs(identity_path("worker", worker_name())).remember(
        HUB_KEY, f"{TARGET.host}:{TARGET.port}")
    refused = [Tagged("worker", Failed("The host removed this machine from the session.",
                                       "BANNED")), Tagged("worker", Ended(False, False))]
    dialog = dialog_for(qtbot, refused)
    assert dialog.hint.text() == REMEMBERED
    type_into(qtbot, dialog.pin_edit, "")
    click(qtbot, dialog.join_button)
    qtbot.waitUntil(lambda: dialog.runner is None, timeout=5_000)
    assert dialog.hint.text() == REMOVED_HINT
    assert "removed" in dialog.message.text()
