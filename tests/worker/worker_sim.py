"""Drives ``WorkerCore``s against an in-process ``HubCore`` on a fake clock.

Both cores are sans-I/O: each request a worker core sends goes into ``hub.handle`` (or
``hub.handle_pairing``) and every reply the hub releases goes back to the core that asked,
so whole sessions run in milliseconds. ``Sim`` is a driver like ``worker/driver.py``, minus
the retries (nothing is ever lost here). Compute is fake (testbed's ``FakeFactory``: a fixed
gradient, as the soak's workers push) unless a test passes another factory.

``driver`` builds the real WorkerDriver over such channels. Not a test module: the worker
tests import it by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from helpers.clock import Clock
from helpers.hub import PIN, T0, fake_key

from computeshare_desktop.events import Event
from computeshare_desktop.hub import HubCore, Reply
from computeshare_desktop.protocol import decode
from computeshare_desktop.worker import (Compute, ComputeFactory, WorkerCore, WorkerDriver,
                                         WorkerOptions)
from computeshare_desktop.worker.effects import (Action, Effect, Emit, Finish, Goodbye, Load,
                                                 Prepare, Send, WaitUntil, Work)
from testbed.fake_compute import FakeFactory

DEVICE = "cpu (simulated)"


@dataclass
class Peer:
    """One worker core in the simulation: its next action and all it did."""

    name: bytes
    core: WorkerCore
    factory: ComputeFactory
    source: str
    action: Action | None = None
    waiting: bool = False  # a request is out; its reply has not come
    paused: bool = False  # the test holds it (a stalled or cut-off machine)
    events: list[Event] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    sent: list[Send] = field(default_factory=list)
    replies: list[Any] = field(default_factory=list)  # what the hub answered, decoded
    compute: Compute | None = None

    @property
    def finish(self) -> Finish | None:
        return self.action if isinstance(self.action, Finish) else None

    def messages(self, kind: type | None = None) -> list[Any]:
        """What it sent (of one type), in order."""
        return [s.message for s in self.sent if kind is None or isinstance(s.message, kind)]

    def of_kind(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def take(self, effects: list[Effect]) -> None:
        """Record the core's effects; the last one is its next action."""
        self.effects += effects
        self.events += [e.event for e in effects if isinstance(e, Emit)]
        last = effects[-1]
        assert not isinstance(last, Emit) and all(isinstance(e, Emit) for e in effects[:-1])
        self.action, self.waiting = last, False


class Sim:
    """A HubCore and the worker cores talking to it, on one fake clock."""

    def __init__(self, hub: HubCore, now: float = T0) -> None:
        self.hub, self.now, self.start = hub, now, now
        self.peers: dict[bytes, Peer] = {}

    def worker(self, name: bytes, *, pin: str = PIN, factory: ComputeFactory | None = None,
               hub_key: str | None = None, expected_key: str | None = None,
               source: str | None = None, payload_filter: Any = None,
               **options: Any) -> Peer:
        """Start a worker core called ``name`` (its fake key follows from the name)."""
        core = WorkerCore(WorkerOptions(pin=pin, name=name.decode(), **options), device=DEVICE,
                          worker_key=fake_key(name), expected_key=expected_key,
                          hub_key=hub_key, payload_filter=payload_filter)
        peer = Peer(name, core, factory or FakeFactory(self.hub.server.numel),
                    source or f"lan/{name.decode()}")
        self.peers[name] = peer
        peer.take(core.start(self.now))
        return peer

    # ----------------------------------------------------------------- running
    def run(self, until: Callable[[], Any], *, limit_s: float = 600.0,
            tick_s: float = 0.1) -> None:
        """Step every peer that can act; when none can, move the clock on and tick the hub."""
        deadline = self.now + limit_s
        while not until():
            assert self.now < deadline, f"not done after {limit_s} s of fake time"
            if not any([self.step(p) for p in list(self.peers.values())]):  # each in turn
                self.advance(self._idle_for(tick_s))

    def finish_all(self, **kwargs: Any) -> None:
        self.run(lambda: all(p.finish or p.paused for p in self.peers.values()), **kwargs)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self._deliver(self.hub.tick(self.now))

    def step(self, peer: Peer) -> bool:
        """Carry out ``peer``'s next action if it can act now; True if it did."""
        action = peer.action
        if peer.paused or peer.waiting or action is None or isinstance(action, Finish):
            return False
        if isinstance(action, WaitUntil) and action.at > self.now:
            return False
        if isinstance(action, Send):
            self._request(peer, action)
        else:
            peer.take(self._carry_out(peer, action))
        return True

    def _carry_out(self, peer: Peer, action: Action) -> list[Effect]:
        core, now = peer.core, self.now
        match action:
            case Goodbye():
                peer.sent.append(action.send)
                self._deliver(self.hub.handle(peer.name, action.send.frames, now,
                                              core.worker_key))
                return core.said_goodbye(now)
            case WaitUntil():
                return core.woke(now)
        try:  # the compute, as the real driver runs it
            match action:
                case Prepare():
                    peer.factory.check(action.welcome, action.graph)
                    return core.prepared(now)
                case Load():
                    peer.compute = peer.factory.build(action.welcome, action.images,
                                                      action.labels)
                    update = None
                case Work():
                    assert peer.compute is not None
                    update = action.task.run(peer.compute)
        except Exception as exc:  # noqa: BLE001 - as the driver: the core ends with it
            return core.failed(exc, now)
        if update is None:
            assert peer.compute is not None
            return core.loaded(peer.compute.numel, peer.compute.device, now)
        self.advance(update.seconds)  # the work takes (fake) time: the others wait meanwhile
        return core.computed(update, self.now)

    def _request(self, peer: Peer, send: Send) -> None:
        """Into the hub; the reply comes now, or later (a parked long-poll)."""
        peer.sent.append(send)
        peer.waiting = True
        if send.hub_key is None:
            replies = self.hub.handle_pairing(peer.name, send.frames, self.now, peer.source)
        else:
            replies = self.hub.handle(peer.name, send.frames, self.now, peer.core.worker_key)
        self._deliver(replies)

    def _deliver(self, replies: list[Reply]) -> None:
        """Each reply to the peer waiting for it (a goodbye's answer is nobody's)."""
        for reply in replies:
            peer = self.peers.get(reply.peer)
            if peer is None or not peer.waiting:
                continue
            peer.replies.append(decode(reply.frames)[0])
            peer.take(peer.core.replied(reply.frames, self.now))

    def _idle_for(self, tick_s: float) -> float:
        wakes = [p.action.at - self.now for p in self.peers.values()
                 if isinstance(p.action, WaitUntil) and not p.paused]
        return max(1e-6, min([tick_s, *wakes]))


# ----------------------------------------------------------------- channels for the driver
class HubChannel:
    """A Channel into an in-process HubCore: a request blocks (on the fake clock) until the
    hub answers it. ``script``: what the next requests meet, in order (an exception class to
    raise, where a timeout costs its timeout on the clock; None: the hub's answer)."""

    def __init__(self, hub: HubCore, clock: Clock, peer: bytes, server_key: str | None,
                 script: list[type[BaseException] | None], log: list[Any]) -> None:
        self.hub, self.clock, self.peer, self.server_key = hub, clock, peer, server_key
        self.script, self.log = script, log
        self.closed = False

    def request(self, frames: Any, timeout_s: float, keep_waiting: Any = None,
                abort: Any = None) -> list[bytes]:
        self.log.append((decode(frames)[0], timeout_s, self.server_key))
        failure = self.script.pop(0) if self.script else None
        if failure is not None:
            if issubclass(failure, TimeoutError):
                self.clock.now += timeout_s
            raise failure()
        now = self.clock.now
        replies = (self.hub.handle_pairing(self.peer, frames, now, "lan/w")
                   if self.server_key is None
                   else self.hub.handle(self.peer, frames, now, fake_key(self.peer)))
        while not any(r.peer == self.peer for r in replies):  # parked: wait for the hub
            self.clock.now += 0.1
            replies = self.hub.tick(self.clock.now)
        return [bytes(f) for f in next(r for r in replies if r.peer == self.peer).frames]

    def close(self) -> None:
        self.closed = True


class HubConnector:
    """Makes HubChannels for one fake worker; ``script[key]``: failures per channel kind
    (None: pairing, else the hub key), shared by the channels it makes."""

    def __init__(self, hub: HubCore, clock: Clock, peer: bytes = b"w1") -> None:
        self.hub, self.clock, self.peer = hub, clock, peer
        self.script: dict[str | None, list[type[BaseException] | None]] = {}
        self.log: list[Any] = []  # (message, timeout_s, hub key) of every request
        self.channels: list[HubChannel] = []

    @property
    def public_key(self) -> str:
        return fake_key(self.peer)

    def pairing(self) -> HubChannel:
        return self._make(None)

    def channel(self, server_key: str) -> HubChannel:
        return self._make(server_key)

    def _make(self, key: str | None) -> HubChannel:
        channel = HubChannel(self.hub, self.clock, self.peer, key,
                             self.script.setdefault(key, []), self.log)
        self.channels.append(channel)
        return channel


def driver(hub: Any, *, hub_key: str | None = None, **options: Any
           ) -> tuple[WorkerDriver, HubConnector, list[Event]]:
    """A driver of one worker core (no heartbeats: they run in real time)."""
    clock = Clock()
    connector = HubConnector(hub, clock)
    opts = WorkerOptions(pin="123456", name="w1", heartbeat_s=3600.0, **options)
    core = WorkerCore(opts, device=DEVICE, worker_key=connector.public_key, hub_key=hub_key)
    events: list[Event] = []
    d = WorkerDriver(core, connector, FakeFactory(hub.server.numel), opts, events.append,
                     clock=clock, wait=clock.wait)
    clock.stop = d.stop
    return d, connector, events
