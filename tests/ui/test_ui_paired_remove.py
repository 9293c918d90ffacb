"""The Paired machines card asks before Remove (the default button and Escape keep the
machine), and once the list is empty it says what is true: no machine paired yet, or none
now because the host removed them (they need the PIN again)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import Qt, QTimer  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from computeshare_desktop.gui.paired_machines import (NEVER, NONE_NOW,  # noqa: E402
                                                      PairedMachinesCard, remove_text)
from computeshare_desktop.service.paired import paired_machines  # noqa: E402
from helpers.ui import answer_box  # noqa: E402
from helpers.ui import click  # noqa: E402

LAPTOP, DESK = "K" * 40, "L" * 40
KEEP = "Keep machine"


@pytest.fixture
def card(qtbot, ui_home):
    """The card over a store of two machines, shown (the laptop listed second)."""
    store = paired_machines("HUBKEY")
    store.remember(LAPTOP, "laptop · CPU", "192.168.1.20")
    store.remember(DESK, "desk · CUDA", None)
    found = PairedMachinesCard()
    qtbot.addWidget(found)
    found.show()
    qtbot.waitExposed(found)
    return found


def listed(card: PairedMachinesCard) -> list[str]:
    return [card.list.item(i).text().split(" · ")[0] for i in range(card.list.count())]


def escape_next(card: PairedMachinesCard) -> list[str]:
    """Press Escape in the card's next question; the list gets the question's text."""
    asked: list[str] = []

    def reply() -> None:
        box = card.question.box
        if box is None:
            QTimer.singleShot(20, reply)
            return
        asked.append(box.text())
        QTest.keyClick(box, Qt.Key.Key_Escape)

    QTimer.singleShot(20, reply)
    return asked


def test_remove_asks_first_and_keep_or_escape_keeps_the_machine(qtbot, card):
    store = paired_machines()
    card.list.setCurrentRow(1)
    asked = answer_box(card.question, KEEP, default=KEEP)  # the default keeps it
    click(qtbot, card.remove_button)
    assert asked == [remove_text("laptop · CPU")] and "PIN" in asked[0]
    assert listed(card) == ["desk", "laptop"] and LAPTOP not in store.removed()

    asked = escape_next(card)
    click(qtbot, card.remove_button)
    assert asked and listed(card) == ["desk", "laptop"] and LAPTOP not in store.removed()

    asked = answer_box(card.question, "Remove", default=KEEP)
    click(qtbot, card.remove_button)
    assert asked and listed(card) == ["desk"] and LAPTOP in store.removed()
    assert [m.name for m in store.machines()] == ["desk · CUDA"]


def test_after_a_remove_the_empty_card_says_none_now_not_never(qtbot, card):
    card.list.setCurrentRow(0)
    answer_box(card.question, "Remove", default=KEEP)
    click(qtbot, card.remove_button)
    card.list.setCurrentRow(0)
    answer_box(card.question, "Remove", default=KEEP)
    click(qtbot, card.remove_button)
    assert card.list.count() == 0 and not card.list.isVisible()
    assert card.empty.isVisible() and card.empty.text() == NONE_NOW
    assert "PIN" in NONE_NOW and "No machine has paired" not in NONE_NOW
    card.refresh()  # the next read of the file says the same
    assert card.empty.text() == NONE_NOW


def test_a_hub_no_machine_ever_paired_with_says_so(qtbot, ui_home):
    card = PairedMachinesCard()
    qtbot.addWidget(card)
    card.show()
    assert card.empty.isVisible() and card.empty.text() == NEVER
    assert not card.remove_button.isEnabled() and card.remove_selected() is False
