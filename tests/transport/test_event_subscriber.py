"""A paired worker can follow the hub's events (accuracy, rounds); an unpaired key cannot."""

from __future__ import annotations

import time

from computeshare_desktop.events import Evaluated, Event, HubStopped, RoundClosed
from computeshare_desktop.transport import EventSubscriber, Identity
from helpers.net import RunningHub, WorkerThread, of_kind, wait_for


def follow(hub: RunningHub, worker: WorkerThread, sink) -> EventSubscriber:
    """Once ``worker`` has paired, listen to the hub's events with its key."""
    wait_for(lambda: worker.session.hub_key, 30, "pairing")
    return EventSubscriber("127.0.0.1", hub.ports.events, worker.identity,
                           worker.session.hub_key, sink).start()


def test_paired_key_receives_events_and_stranger_does_not(tmp_path):
    hub = RunningHub(tmp_path, workers=1, rounds=150, batch_size=8, eval_every=50)
    worker = WorkerThread(hub.port, "w")
    seen: list[Event] = []
    strange: list[Event] = []
    stranger = EventSubscriber("127.0.0.1", hub.ports.events, Identity.generate(),
                               hub.identity.public, strange.append).start()
    follower = None
    try:
        follower = follow(hub, worker, seen.append)
        wait_for(lambda: of_kind(seen, Evaluated), 60, "an eval event")
        rounds = [e for e in seen if isinstance(e, RoundClosed)]
        assert rounds and rounds[-1].workers[0].name == "w"
        worker.join(120)
        time.sleep(0.3)
    finally:
        if follower is not None:
            follower.close()
        stranger.close()
        worker.close()
        hub.close()
    assert 0 <= getattr(seen[-1], "accuracy", 0) <= 1
    assert strange == []


def test_a_stopping_hub_publishes_hub_stopped_to_its_followers(tmp_path):
    """The PUB half of the hub's goodbye: a follower (the GUI's feed) hears it at once, with
    the version the hub stopped at."""
    hub = RunningHub(tmp_path, workers=1, rounds=100_000, batch_size=8, eval_every=0)
    worker = WorkerThread(hub.port, "w")
    seen: list[Event] = []
    follower = None
    try:
        follower = follow(hub, worker, seen.append)
        wait_for(lambda: of_kind(seen, RoundClosed), 30, "a round event")
        hub.stop.set()
        stopped = time.monotonic()
        wait_for(lambda: of_kind(seen, HubStopped), 2, "hub_stopped")
        assert time.monotonic() - stopped < 2.0
        goodbye = of_kind(seen, HubStopped)[0]
        last_round = max(e.version for e in of_kind(seen, RoundClosed))
        assert goodbye.version >= last_round
    finally:
        if follower is not None:
            follower.close()
        worker.close()
        hub.close()
