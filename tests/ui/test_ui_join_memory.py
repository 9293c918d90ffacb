"""The Join dialog after the host removed this machine: no promise of joining without the
PIN, and the reason the PIN is asked for again."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from helpers.host import HeldJoin, joining  # noqa: E402
from computeshare_desktop.events import Ended, Failed  # noqa: E402
from computeshare_desktop.gui.join_dialog import (PIN_HINT, REMEMBERED,  # noqa: E402
                                                  REMOVED_HINTS, JoinDialog)
from computeshare_desktop.service import (JoinService, JoinTarget,  # noqa: E402
                                          Tagged, remembers)
from computeshare_desktop.service.join import removals  # noqa: E402
from computeshare_desktop.service.messages import refusal_message  # noqa: E402
from computeshare_desktop.gui.words import refusal  # noqa: E402
from computeshare_desktop.service.options import worker_name  # noqa: E402
from computeshare_desktop.transport import KnownHubs, identity_path  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402

TARGET = JoinTarget.from_address("127.0.0.1:9")  # nothing listens; nothing is started
HUB_KEY = "hub-key-of-the-test"


def dialog_for(qtbot, script: list[Tagged] | None = None) -> JoinDialog:
    dialog = JoinDialog(TARGET, lambda t, pin: HeldJoin(joining(t, pin=pin), script or []),
                        remembered=lambda t: remembers(t, worker_name()), refresh_ms=10)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


@pytest.mark.parametrize("how", ["removed", "blocked"])
def test_a_removed_machines_join_dialog_asks_for_the_pin_and_says_why(qtbot, ui_home, how):
    key_file = identity_path("worker", worker_name())
    KnownHubs(key_file).remember(HUB_KEY, f"{TARGET.host}:{TARGET.port}")
    assert dialog_for(qtbot).hint.text() == REMEMBERED  # paired before: no PIN needed

    # the host removed it: the service forgot the key and noted how (test_join_memory.py)
    KnownHubs(key_file).forget(HUB_KEY)
    removals(key_file, how).remember(HUB_KEY, f"{TARGET.host}:{TARGET.port}")
    dialog = dialog_for(qtbot)
    assert dialog.hint.text() == REMOVED_HINTS[how] and "PIN" in REMOVED_HINTS[how]
    assert ("next session" in dialog.hint.text()) is (how == "removed")  # the truth for it
    assert "Allow again" in dialog.hint.text()
    click(qtbot, dialog.join_button)  # no PIN typed: asked for it
    assert "PIN" in dialog.message.text() and dialog.runner is None

    removals(key_file, how).forget(HUB_KEY)  # paired again since: the plain hint
    assert dialog_for(qtbot).hint.text() == PIN_HINT


@pytest.mark.parametrize("code, how", [("BANNED", "removed"), ("BLOCKED", "blocked")])
def test_the_dialog_that_hears_the_removal_drops_its_promise(qtbot, ui_home, code, how):
    KnownHubs(identity_path("worker", worker_name())).remember(
        HUB_KEY, f"{TARGET.host}:{TARGET.port}")
    refused = [Tagged("worker", Failed(refusal_message(code), code)),
               Tagged("worker", Ended(False, False))]
    dialog = dialog_for(qtbot, refused)
    assert dialog.hint.text() == REMEMBERED
    type_into(qtbot, dialog.pin_edit, "")
    click(qtbot, dialog.join_button)
    qtbot.waitUntil(lambda: dialog.runner is None, timeout=5_000)
    assert dialog.hint.text() == REMOVED_HINTS[how]
    assert dialog.message.text() == refusal(code) and f"({code})" not in dialog.message.text()


# ---------------------------------------------------------------- joining again, same choices
CHOICES = {"threads": 3, "max_rate": 250.0, "pause_on_battery": False}  # none the default


def chosen(runner: JoinService) -> dict[str, object]:
    plan = runner.plan
    return {"threads": plan.options.threads, "max_rate": plan.options.max_rate,
            "pause_on_battery": plan.options.pause_on_battery}


def held(target: JoinTarget, pin: str) -> HeldJoin:
    return HeldJoin(joining(target, pin=pin, name="w"), [])


def test_a_worker_that_joins_again_keeps_the_join_dialogs_choices(qtbot, main_window,
                                                                  monkeypatch):
    """After approving the hub's code (main_window._rejoin) and when its host resumes the
    session (gui/comeback.py), the new worker shares this machine as the old one did."""
    from computeshare_desktop.gui.comeback import Comebacks
    from computeshare_desktop.gui.progress_window import ProgressWindow

    assert chosen(held(TARGET, "")) != CHOICES
    old = held(TARGET, "123456").choose(**CHOICES)  # type: ignore[arg-type]
    monkeypatch.setattr(main_window, "_new_worker", held)
    window = ProgressWindow.for_worker(old, [])
    main_window._open_progress(window)
    new = main_window._rejoin(window)
    assert new is not None and new.runner.plan.options.pin == "123456"
    assert chosen(new.runner) == CHOICES

    opened: list[JoinService] = []
    comebacks = Comebacks(held, lambda runner, events: opened.append(runner))  # type: ignore
    window = ProgressWindow.for_worker(old, [])
    qtbot.addWidget(window)
    comebacks.come_back(window, TARGET)
    assert len(opened) == 1 and opened[0].plan.options.pin == "" and chosen(opened[0]) == CHOICES
