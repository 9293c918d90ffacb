"""The driver's policies on a fake clock: it runs a core over channels into an in-process hub
(worker_sim.HubConnector) that fail as a test scripts them; and the liveness rules alone."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.hub import HUB_KEY, T0, make_hub
from worker_sim import Sim

from computeshare_desktop.errors import HubStoppedError, HubUnreachableError
from computeshare_desktop.events import (Event, HubBack, HubLost, HubSilent, HubStopped,
                                         Joined, Pushed, WorkerDone)
from computeshare_desktop.protocol import decode, encode
from computeshare_desktop.protocol.messages import (Bye, Done, Join, PairStart, Ping, Pong,
                                                    Push, Reject)
from computeshare_desktop.worker import WorkerOptions
from computeshare_desktop.worker.liveness import Liveness, read_beat
from testbed.fake_compute import FakeFactory
from worker_sim import driver


def test_a_driver_runs_a_whole_session_and_closes_every_channel() -> None:
    hub = make_hub(workers=1, rounds=3)
    d, connector, events = driver(hub)
    result = d.run()
    assert (result.pushed, result.version) == (3, 2) and hub.done
    assert [type(e) for e in events if isinstance(e, (Joined, Pushed, WorkerDone))] == \
        [Joined, Pushed, Pushed, Pushed, WorkerDone]
    assert isinstance(connector.log[0][0], PairStart) and connector.log[0][2] is None
    assert all(c.closed for c in connector.channels) and d.stop.is_set()


def test_a_hub_that_never_answers_is_retried_with_back_off_then_given_up() -> None:
    hub = make_hub()
    d, connector, events = driver(hub, request_timeout_s=5.0, first_contact_s=15.0)
    connector.script[None] = [TimeoutError] * 10
    with pytest.raises(HubUnreachableError, match="does not answer"):
        d.run()
    # timeouts at 5, 10.25 and 15.75 s after the first try (each waits 5 s), counted from
    # the first silence: at 21.75 s more than 15 s have passed
    assert events == [HubSilent(retry_in=0.25), HubSilent(retry_in=0.5),
                      HubSilent(retry_in=1.0)]
    assert [type(m) for m, _, _ in connector.log] == [PairStart] * 4


def test_a_hub_gone_silent_is_given_up_after_give_up_s_with_a_goodbye_tried() -> None:
    hub = make_hub(workers=1, rounds=1000)
    d, connector, events = driver(hub, request_timeout_s=2.0, give_up_s=30.0)
    sent: list[Any] = []

    def silence_after_training(event: Event) -> None:
        sent.append(event)
        if isinstance(event, Pushed):  # from now on the hub's link is cut
            connector.script[HUB_KEY] += [TimeoutError] * 100
    d.emit = silence_after_training
    with pytest.raises(HubUnreachableError, match="silent for 30 s"):
        d.run()
    # a pull may take 2 + 2 s plus its model's transfer: ~6 s a try, 4 retries in 30 s
    silent = [e.retry_in for e in sent if isinstance(e, HubSilent)]
    assert silent == [0.25, 0.5, 1.0, 2.0]
    assert isinstance(connector.log[-1][0], Bye) and connector.log[-1][1] == 1.0
    assert not any(isinstance(m, Bye) for m, _, _ in connector.log[:-1])


def test_a_stop_abandons_the_request_under_way() -> None:
    hub = make_hub()
    d, connector, events = driver(hub)
    connector.script[None] = [InterruptedError]
    with pytest.raises(HubUnreachableError, match="stopped while waiting"):
        d.run()


def test_a_stop_the_hub_announced_ends_with_hub_stopped() -> None:
    hub = make_hub(workers=1, rounds=1000)
    d, connector, events = driver(hub)

    def feed(event: Event) -> None:
        events.append(event)
        if isinstance(event, Pushed) and event.version == 1:
            d.hub_said_stopped(2)  # the event feed said so
            connector.script[HUB_KEY].append(InterruptedError)
    d.emit = feed
    with pytest.raises(HubStoppedError, match="version 2"):
        d.run()
    assert events[-1] == HubStopped(version=2)
    assert not any(isinstance(m, Bye) for m, _, _ in connector.log)


def test_a_refused_key_pairs_again_on_the_pairing_channel() -> None:
    hub = make_hub(workers=1)
    d, connector, events = driver(hub, hub_key=HUB_KEY)
    connector.script[HUB_KEY] = [PermissionError]
    d.run()
    kinds = [(type(m), key) for m, _, key in connector.log[:4]]
    assert kinds == [(Join, HUB_KEY), (PairStart, None), (type(connector.log[2][0]), None),
                     (Join, HUB_KEY)]


def test_leaving_sends_one_goodbye_whatever_becomes_of_it() -> None:
    hub = make_hub(workers=1, rounds=1000)
    d, connector, events = driver(hub)

    def leave() -> None:  # the user leaves while the worker computes
        d.leave()
        connector.script[HUB_KEY] += [None, TimeoutError]  # the push goes, the goodbye not
    d.factory = FakeFactory(hub.server.numel, on_work=leave)
    result = d.run()
    assert events[-1] == WorkerDone(pushed=1, rejected=0, version=0, left=True)
    assert result.pushed == 1 and not any(isinstance(e, HubSilent) for e in events)
    assert [type(m) for m, _, _ in connector.log[-2:]] == [Push, Bye]


def test_a_leave_during_a_long_poll_abandons_it() -> None:
    hub = make_hub(workers=1, rounds=1000)
    d, connector, events = driver(hub)

    def leave_after_a_push(event: Event) -> None:
        events.append(event)
        if isinstance(event, Pushed):
            d.leave()
            connector.script[HUB_KEY].append(InterruptedError)  # as a real channel's abort
    d.emit = leave_after_a_push
    with pytest.raises(HubUnreachableError, match="stopped while waiting"):
        d.run()
    assert isinstance(connector.log[-1][0], Bye)  # the hub is still told


# ----------------------------------------------------------------- liveness, alone
def test_the_hub_is_reported_lost_once_then_back() -> None:
    watch = Liveness(WorkerOptions(pin="", name="w", lost_after_s=6.0, give_up_s=120.0))
    assert watch.missed(T0) == []  # never heard: nothing to compare with
    watch.answered(T0)
    assert watch.missed(T0 + 5.9) == []
    assert watch.missed(T0 + 6.0) == [HubLost(silent_s=6.0, give_up_s=120.0)]
    assert watch.missed(T0 + 9.0) == []  # said once
    assert watch.heard(T0 + 10.0) == [HubBack()]
    assert watch.heard(T0 + 11.0) == []
    assert watch.missed(T0 + 16.9) == [] and watch.missed(T0 + 17.0) != []


def test_lost_comes_by_half_of_give_up_when_that_is_sooner() -> None:
    watch = Liveness(WorkerOptions(pin="", name="w", lost_after_s=6.0, give_up_s=5.0))
    watch.heard(T0)
    assert watch.missed(T0 + 2.4) == [] and watch.missed(T0 + 2.5) != []


def test_a_slow_transfer_is_waited_for_while_pongs_come() -> None:
    watch = Liveness(WorkerOptions(pin="", name="w", heartbeat_s=1.0))
    assert not watch.alive(T0)
    watch.heard(T0)
    assert watch.alive(T0 + 4.9) and not watch.alive(T0 + 5.0)


def test_give_up_counts_from_the_first_silence_or_the_last_answer() -> None:
    watch = Liveness(WorkerOptions(pin="", name="w", first_contact_s=15.0, give_up_s=120.0))
    assert watch.give_up(T0) is None and watch.give_up(T0 + 15.0) is None
    assert "does not answer" in str(watch.give_up(T0 + 15.1))
    watch.answered(T0 + 20.0)
    assert watch.give_up(T0 + 140.0) is None
    assert "silent for 120 s" in str(watch.give_up(T0 + 140.1))


def test_a_heartbeat_reply_says_alive_stopped_or_forgotten() -> None:
    assert read_beat(encode(Pong(version=1, state="training"))).alive
    assert read_beat(encode(Done(version=9))).alive
    stopped = read_beat(encode(Reject(code="HUB_STOPPED", detail="", version=7,
                                      retry_after=0.0)))
    assert stopped.stopped == 7 and not stopped.alive
    assert read_beat(encode(Reject(code="UNKNOWN_WORKER", detail="", version=-1,
                                   retry_after=0.0))).forgotten
    assert read_beat(encode(Ping(token="x"))) == read_beat(encode(Ping(token="y")))


def test_pings_carry_the_token_once_joined() -> None:
    sim = Sim(make_hub(workers=1))
    peer = sim.worker(b"w")
    assert peer.core.ping() is None
    sim.run(lambda: peer.core.token)
    assert decode(peer.core.ping())[0] == Ping(token=peer.core.token)


def test_a_worker_told_to_leave_before_it_starts_ends_at_once() -> None:
    hub = make_hub()
    d, connector, events = driver(hub)
    d.leave()
    result = d.run()
    assert events == [WorkerDone(pushed=0, rejected=0, version=-1, left=True)]
    assert result.pushed == 0 and connector.log == []
