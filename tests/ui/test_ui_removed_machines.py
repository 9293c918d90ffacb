"""The hub window's Removed machines card: hidden while nobody is refused, one line per
machine saying what holds for it (removed from this session, or blocked), and Allow again
asks the session and logs a sentence."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.gui.removed_machines import RemovedMachinesCard  # noqa: E402
from computeshare_desktop.hub.blocked import RemovedMachine  # noqa: E402
from helpers.ui import click  # noqa: E402


class Session:
    """What the card reads and asks (service.host.HostService's two methods)."""

    def __init__(self) -> None:
        self.refused: list[RemovedMachine] = []
        self.allowed: list[str] = []

    def removed_machines(self) -> list[RemovedMachine]:
        return list(self.refused)

    def allow_again(self, key: str) -> None:
        self.allowed.append(key)


def test_the_card_lists_who_is_refused_and_allows_again(qtbot):
    session, notes = Session(), []
    card = RemovedMachinesCard(session, notes.append)
    qtbot.addWidget(card)
    card.show()
    card.refresh()
    assert card.isHidden()  # nobody refused: no card
    now = time.time()
    session.refused = [RemovedMachine("k1", "laptop · CPU", "192.168.1.20", False, now),
                       RemovedMachine("k2", "pi · CPU", "", True, now - 60)]
    card.refresh()
    assert not card.isHidden() and card.list.count() == 2
    lines = [card.list.item(i).text() for i in range(2)]
    assert lines[0].startswith("laptop · CPU · 192.168.1.20 · removed from this session")
    assert lines[1] == "pi · CPU · blocked from your sessions"
    assert not card.allow_button.isEnabled()  # nothing selected
    card.list.item(1).setSelected(True)
    click(qtbot, card.allow_button)
    assert session.allowed == ["k2"] and notes == ["pi · CPU may join again with the PIN."]
    assert card.list.count() == 1
    card.refresh()  # the session has not caught up yet: the line stays gone
    assert card.list.count() == 1
    session.refused = session.refused[:1]
    card.refresh()
    assert card.list.count() == 1 and not card.allow_button.isEnabled()
    session.refused = []
    card.refresh()
    assert card.isHidden()


class Asked:
    """A stop question that notes its text and keeps training."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def ask(self, parent, title: str, text: str, action: str) -> bool:
        self.texts.append(text)
        return False


def test_leaving_says_whether_the_others_train_on(qtbot):
    from computeshare_desktop.events import Joined, Pushed, WorkerInfo, WorkerJoined
    from computeshare_desktop.gui.progress_state import ProgressState
    from computeshare_desktop.gui.progress_window import ProgressWindow
    from computeshare_desktop.service import FEED, Tagged
    from helpers.ui import Scripted

    runner = Scripted("leave-test")
    runner.script = [Tagged("worker", Joined(worker_id=1, shard=0, num_shards=2,
                                             dataset="mnist", model="simplenet", rounds=10,
                                             device="CPU")),
                     Tagged("worker", Pushed(1, 1, 0.5, 0.02, 32, True, 1, 0))]
    question = Asked()
    window = ProgressWindow(runner, ProgressState("worker"), title="t", subtitle="Worker vm",
                            question=question)
    qtbot.addWidget(window)
    window.refresh()
    assert window.training
    window.stop_session()
    assert question.texts[-1].endswith("It is the only worker: training waits until "
                                       "another machine joins.")
    runner.script = [Tagged(FEED, WorkerJoined(WorkerInfo(2, "pi", "CPU", 1)))]
    window.refresh()
    window.stop_session()
    assert question.texts[-1].endswith("The other machines train on without this one.")
