"""The app's question when a hub offers its model as code: the hub, the file and its full
SHA-256, "Don't run" by default; approving stores that hash for that hub and joins again
in a new window, declining stores nothing."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QTimer  # noqa: E402

from helpers.host import joining  # noqa: E402
from computeshare_desktop.events import CodeRefused, Ended, Failed  # noqa: E402
from computeshare_desktop.gui.code_dialog import DONT, RUN, CodeQuestion  # noqa: E402
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.service import (JoinService, JoinTarget, Tagged,  # noqa: E402
                                          code_approvals)

SHA = "5a" * 32
OFFER = CodeRefused("branchy.py:Net", SHA, "the hub's key", "lab hub")


class RefusedRunner:
    """A worker that refused the hub's code and ended."""

    running, stopping, scope = False, False, "test-scope"

    def __init__(self) -> None:
        self._events = [Tagged("worker", OFFER),
                        Tagged("worker", Failed("code not approved", "CODE_NOT_APPROVED")),
                        Tagged("worker", Ended())]

    def drain(self) -> list[Tagged]:
        events, self._events = self._events, []
        return events

    def stop(self) -> None:
        pass

    def join(self, timeout_s: float) -> bool:
        return True


class Answer:
    def __init__(self, approve: bool) -> None:
        self.approve, self.asked = approve, []

    def ask(self, parent, refused) -> bool:
        self.asked.append(refused)
        return self.approve


def test_the_question_shows_the_hash_and_defaults_to_dont_run(qtbot, ui_home):
    question = CodeQuestion()
    box = question.make_box(None, OFFER)
    qtbot.addWidget(box)
    assert box.defaultButton().text() == DONT and box.escapeButton() is box.defaultButton()
    for words in (SHA, "branchy.py:Net", "lab hub", "no sandbox", "this exact file"):
        assert words in box.text()
    QTimer.singleShot(50, lambda: question.box.defaultButton().click())
    assert question.ask(None, OFFER) is False  # Enter: the default, don't run
    QTimer.singleShot(50, lambda: next(b for b in question.box.buttons()
                                       if b.text() == RUN).click())
    assert question.ask(None, OFFER) is True


@pytest.mark.parametrize("approve", [False, True])
def test_the_worker_window_asks_once_and_approving_stores_and_rejoins(qtbot, ui_home,
                                                                      approve):
    answer = Answer(approve)
    window = ProgressWindow(RefusedRunner(), ProgressState("worker", name="w"), title="t",
                            subtitle="s", code_question=answer)  # type: ignore[arg-type]
    qtbot.addWidget(window)
    rejoined: list[object] = []
    window.rejoin.connect(rejoined.append)
    window.refresh()
    qtbot.waitUntil(lambda: answer.asked == [OFFER])
    window.refresh()
    qtbot.wait(20)
    assert answer.asked == [OFFER]  # asked once
    assert window.state.phase == "failed"
    assert rejoined == ([window] if approve else [])
    assert code_approvals().approved("the hub's key", SHA) is approve


def test_approving_in_the_main_window_opens_a_new_worker_window(qtbot, main_window):
    target = JoinTarget.from_address("127.0.0.1:9")  # nothing listens: the rejoin fails
    old = JoinService(joining(target, pin="123456", name="w"))
    window = ProgressWindow.for_worker(old, [], code_question=CodeQuestion())
    main_window._open_progress(window)
    new = main_window._rejoin(window)
    assert new is not None and new is not window
    assert main_window.progress_windows == [new]
    assert new.runner.target == target and new.runner.plan.options.pin == "123456"
    qtbot.waitUntil(lambda: not new.runner.running, timeout=10_000)
