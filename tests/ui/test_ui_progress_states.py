"""What a progress window says when nothing trains: a hub whose only worker paused waits for
workers and pauses its ETA; Stop says "Stopping…" at once, with no row training and no New
PIN; a paused worker's own window and row say "Paused"; the Training loss card shows the
last round's loss, not the smoothed curve's; an ended or finished session offers no new PIN."""

from __future__ import annotations


import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.events import (Joined, Paused, Pushed,  # noqa: E402
                                         Resumed, StateChanged, WorkerInfo,
                                         WorkerJoined, WorkerLeft, WorkerReady)
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.service import FEED, Tagged  # noqa: E402
from helpers.ui import Scripted  # noqa: E402
from helpers.clock import Clock  # noqa: E402
from helpers.windows import LAPTOP, a_round, laptop_hub_window  # noqa: E402
from computeshare_desktop.gui.pin_card import PinCard  # noqa: E402
from helpers.windows import finished_window  # noqa: E402


def test_a_hub_whose_only_worker_paused_waits_for_workers_and_pauses_its_eta(qtbot):
    clock = Clock()
    window = laptop_hub_window(qtbot, clock)
    assert window.chip.text() == "Training" and window.eta_label.text().startswith("ETA 4")
    window.runner.script = [Tagged("hub", WorkerLeft(LAPTOP, "paused"))]
    clock.now += 1
    window.refresh()
    assert window.chip.text() == "Waiting for workers"
    assert "1 paused" in window.chip.toolTip()
    assert window.eta_label.text().startswith("ETA paused")
    assert window.cards["workers"].value.text() == "0 of 1"
    back = WorkerInfo(2, LAPTOP.name, LAPTOP.device, 0, key=LAPTOP.key)  # Resume: a new id
    window.runner.script = [Tagged("hub", WorkerJoined(back)), Tagged("hub", WorkerReady(back))]
    window.refresh()
    assert window.chip.text() == "Training"
    window.confirmed = True
    window.close()


def test_stop_says_stopping_at_once_no_row_trains_and_no_new_pin(qtbot):
    window = laptop_hub_window(qtbot, Clock())
    assert window.pin_card is not None
    window.show()
    assert window.pin_card.new_button.isVisible()
    window.confirmed = True  # no question
    window.stop_session()
    window.refresh()  # the hub has not said a word yet
    assert window.chip.text() == "Stopping…" and window.eta_label.text().startswith("ETA —")
    assert [row.state for row in window.state.workers.values()] == ["stopped"]
    assert not window.pin_card.new_button.isVisible()
    window.runner.script = [a_round(9, 2.0)]  # a round in flight closes while stopping
    window.refresh()
    assert window.chip.text() == "Stopping…"
    assert [row.state for row in window.state.workers.values()] == ["stopped"]
    window.close()


def test_the_hubs_own_stop_event_says_stopping():
    state = ProgressState("hub", total_rounds=10, expected_workers=1)
    state.apply([Tagged("hub", e) for e in (WorkerJoined(LAPTOP), WorkerReady(LAPTOP),
                                            StateChanged("training"))])
    state.apply([Tagged("hub", StateChanged("stopped"))])  # a Stop the window did not ask
    assert state.chip() == ("Stopping…", "stopped") and state.workers[1].state == "stopped"


JOINED = Joined(worker_id=3, shard=0, num_shards=1, dataset="mnist-sample", model="simplenet",
                rounds=50, device="CPU", batch_size=32)


def test_a_paused_workers_window_and_own_row_say_paused(qtbot):
    runner = Scripted("states-test")
    state = ProgressState("worker", name="vm", clock=Clock())
    window = ProgressWindow(runner, state, title="Training for t", subtitle="s",
                            refresh_ms=10_000)
    qtbot.addWidget(window)
    me = WorkerInfo(3, "vm", "CPU", 0, key="k-vm")
    runner.script = [Tagged("worker", JOINED)] + \
        [Tagged("worker", Pushed(v, 0, 1.5, 0.02, 32, True, v + 1, 0)) for v in range(4)]
    window.refresh()
    assert window.chip.text() == "Training" and state.workers[3].state == "training"
    runner.script = [Tagged("worker", Paused(reason="you")),
                     a_round(5, 1.4, FEED, me)]  # a round in flight still lists it
    window.refresh()
    assert window.chip.text() == "Paused" and window.chip.toolTip() == "Paused by you"
    assert state.workers[3].state == "paused"
    assert window.eta_label.text().startswith("ETA paused")
    runner.script = [Tagged("worker", Resumed()),
                     Tagged("worker", Joined(**{**{f: getattr(JOINED, f) for f in
                                                   JOINED.__struct_fields__}, "worker_id": 4}))]
    window.refresh()
    assert window.chip.text() != "Paused" and list(state.workers) == [4]
    window.confirmed = True
    window.close()


def test_the_training_loss_card_shows_the_last_rounds_loss(qtbot):
    window = laptop_hub_window(qtbot, Clock())  # losses 3, 2, 3, 2, ...: the last is 2.0
    assert window.state.loss[-1][1] == 2.0 and window.state.loss_smooth[-1][1] != 2.0
    assert window.cards["loss"].value.text() == "2.0000"
    assert "last round" in window.cards["loss"].toolTip()
    window.confirmed = True
    window.close()


def test_an_ended_session_offers_no_new_pin(qtbot, styled_app):
    card = PinCard("428913")
    qtbot.addWidget(card)
    card.show()
    assert card.new_button.isVisible()
    card.end()
    assert not card.new_button.isVisible() and not card.copy_button.isVisible()
    assert not card.digits.isEnabled()


def test_a_finished_sessions_window_has_no_new_pin(qtbot, styled_app, tmp_path):
    window = finished_window(qtbot, tmp_path)
    assert window.pin_card is not None and window.pin_card.new_button.isVisible()
    window.refresh()
    assert not window.state.active
    assert not window.pin_card.new_button.isVisible()
    assert not window.pin_card.copy_button.isVisible()
