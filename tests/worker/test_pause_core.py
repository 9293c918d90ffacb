"""Pausing a worker, in process: worker cores against a real HubCore on a fake clock, and the
driver with a fake battery. The hub re-plans without the paused worker, the worker returns
without the PIN (a JOIN, no pairing) on the shard it held, and nothing computed is lost."""

from __future__ import annotations

from helpers.hub import T0, make_hub
from helpers.clock import Clock
from worker_sim import DEVICE, HubConnector, Sim

from computeshare_desktop.events import Event, Joined, Paused, Pushed, Resumed, WorkerDone
from computeshare_desktop.events import WorkerLeft
from computeshare_desktop.protocol.messages import Bye, Join, PairStart
from computeshare_desktop.worker import WorkerCore, WorkerDriver, WorkerOptions
from computeshare_desktop.worker.battery import BatteryWatch, Power
from computeshare_desktop.worker.pause import PauseReason, PauseSwitch, PauseView, pause_text
from testbed.fake_compute import FakeFactory


def test_a_paused_worker_frees_its_share_and_returns_without_the_pin() -> None:
    hub = make_hub(workers=2, rounds=20)
    sim = Sim(hub)
    w1, w2 = (sim.worker(name, factory=FakeFactory(hub.server.numel, seconds=0.1))
              for name in (b"w1", b"w2"))
    sim.run(lambda: hub.server.version >= 3)
    hub_events: list[Event] = hub.drain_events()
    w2.core.want_pause(PauseReason.YOU.value)
    sim.run(lambda: bool(w2.of_kind(Paused)))
    at_pause = hub.server.version
    assert w2.of_kind(Paused)[0].reason == "you" and w2.core.token is None
    assert w2.messages(Bye)[-1].paused and w2.core.rejected == 0  # its last work was taken
    hub_events += hub.drain_events()
    assert [e.reason for e in hub_events if isinstance(e, WorkerLeft)] == ["paused"]
    # the hub re-plans: the rounds go on with w1 alone
    sim.run(lambda: hub.server.version >= at_pause + 3)
    assert len(hub.members) == 1 and w2.of_kind(Pushed)[-1].version < at_pause
    w2.core.want_pause(None)  # resume
    sim.run(lambda: w2.of_kind(Pushed)[-1].version > at_pause + 3)
    sim.finish_all()
    assert len(w2.of_kind(Resumed)) == 1 and len(w2.of_kind(Joined)) == 2
    assert len(w2.messages(PairStart)) == 1 and len(w2.messages(Join)) == 2  # no PIN again
    assert [j.shard for j in w2.of_kind(Joined)] == [1, 1]  # its own shard: its cache's
    # nothing lost: every round closed, every push of both workers accepted
    assert hub.server.version == 20 and hub.done
    assert (w1.core.rejected, w2.core.rejected) == (0, 0)
    assert w1.finish is not None and w2.finish is not None
    assert w2.finish.result is not None and w2.finish.error is None


def test_a_worker_paused_through_the_end_ends_cleanly_on_resume() -> None:
    hub = make_hub(workers=2, rounds=8)
    sim = Sim(hub)
    sim.worker(b"w1")
    w2 = sim.worker(b"w2")
    sim.run(lambda: hub.server.version >= 2)
    w2.core.want_pause(PauseReason.BATTERY.value)
    sim.run(lambda: hub.done)
    w2.core.want_pause(None)
    sim.finish_all()
    assert w2.finish is not None and w2.finish.error is None  # no "training has finished"
    assert w2.of_kind(WorkerDone) and not w2.of_kind(WorkerDone)[-1].left


def test_a_worker_left_while_paused_ends_without_a_second_goodbye() -> None:
    hub = make_hub(workers=1, rounds=100)
    sim = Sim(hub)
    w1 = sim.worker(b"w1")
    sim.run(lambda: hub.server.version >= 2)
    w1.core.want_pause(PauseReason.BATTERY.value)
    sim.run(lambda: bool(w1.of_kind(Paused)))
    w1.core.want_pause(PauseReason.YOU.value)  # the person pauses too: the reason changes
    sim.advance(1.0)
    sim.run(lambda: len(w1.of_kind(Paused)) == 2)
    assert [p.reason for p in w1.of_kind(Paused)] == ["battery", "you"]
    w1.core.leave()
    sim.finish_all()
    assert len(w1.messages(Bye)) == 1 and w1.of_kind(WorkerDone)[-1].left


def test_the_driver_pauses_on_battery_and_resumes_on_ac() -> None:
    """The real driver on a fake clock; the battery watch reads a fake battery: on AC, then
    on battery from t+5 s to t+30 s."""
    hub = make_hub(workers=1, rounds=40, deadline_floor_s=1000.0)
    clock = Clock()
    connector = HubConnector(hub, clock)
    opts = WorkerOptions(pin="123456", name="w1", heartbeat_s=3600.0)
    core = WorkerCore(opts, device=DEVICE, worker_key=connector.public_key)
    pauses = PauseSwitch()
    watch = BatteryWatch(pauses, lambda: Power(55.0, not T0 + 5 <= clock.now < T0 + 30))
    events: list[Event] = []
    factory = FakeFactory(hub.server.numel, on_work=lambda: setattr(clock, "now",
                                                                    clock.now + 0.25))

    def wait(seconds: float) -> bool:
        stopped = clock.wait(seconds)
        watch.check()  # as the battery thread would, every so often
        return stopped

    def emit(event: Event) -> None:
        events.append(event)
        watch.check()

    d = WorkerDriver(core, connector, factory, opts, emit, clock=clock, wait=wait,
                     pauses=pauses)
    clock.stop = d.stop
    result = d.run()
    assert [type(e) for e in events if isinstance(e, (Paused, Resumed))] == [Paused, Resumed]
    paused = next(e for e in events if isinstance(e, Paused))
    assert paused.reason == "battery"
    assert pause_text(paused.reason) == "Paused: on battery power — resumes on AC"
    assert result.pushed == 40 and result.rejected == 0 and hub.done  # nothing lost
    assert [type(m[0]) for m in connector.log].count(PairStart) == 1  # paired once
    assert clock.now > T0 + 30  # it waited for AC


def test_the_battery_watch_acts_on_changes_only() -> None:
    switch = PauseSwitch()
    readings: list[Power | None] = [None, Power(80, True), Power(79, False), Power(78, False),
                                    Power(77, False), Power(77, None), Power(90, True)]
    watch = BatteryWatch(switch, lambda: readings.pop(0))
    assert not watch.check() and switch.reason is None  # no battery: never paused
    assert not watch.check() and switch.reason is None  # on AC
    assert watch.check() and switch.reason is PauseReason.BATTERY  # unplugged
    switch.resume()  # its person resumes on battery: it trains on
    assert watch.check() and switch.reason is None
    switch.pause()  # the person's pause outlives the battery's end
    assert watch.check() and switch.reason is PauseReason.YOU
    assert not watch.check() and switch.reason is PauseReason.YOU  # unknown: taken as AC
    switch.resume()
    assert not watch.check() and switch.reason is None


def test_the_pause_view_says_why() -> None:
    view = PauseView()
    assert view.button == "Pause" and view.text == ""
    view.clicked(True)
    assert (view.button, view.text) == ("Resume", "Pausing at the end of this round…")
    view.apply([Paused(reason="you")])
    assert (view.button, view.text) == ("Resume", "Paused by you")
    view.clicked(False)
    assert view.text == "Resuming: joining again…"
    view.apply([Resumed()])
    assert (view.button, view.text) == ("Pause", "")
    view.apply([Paused(reason="battery")])
    assert (view.button, view.text) == ("Resume", "Paused: on battery power — resumes on AC")
