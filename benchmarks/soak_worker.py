"""Lightweight simulated workers for the soak benchmark: the real protocol, no training.

A ``SimWorker`` is one thread that runs the package's own worker: a ``WorkerCore`` (SPAKE2
pairing, joining, the shard, the model copy with its deltas, pushes through the codecs)
carried out by the one ``WorkerDriver`` (its Lazy Pirate retry with back-off, its heartbeat
on a thread and channel of its own, its give-up rule) over real ZeroMQ: the transport's
``ReqChannel``s, made by the soak's ``SoakConnector`` from the worker's own loopback address
and wrapped to tally what comes back and to carry out the churn. Instead of computing, it
hands the core testbed's ``FakeCompute``: one fixed random gradient of the model's size
(N(0, 1e-3)), its sign alternating with the version: the hub decodes, averages and steps
for real, and the weights oscillate instead of drifting, so they stay finite however long
the soak runs.

The soak's churn tells a worker how to go (``Leave``): say goodbye, rejoin at once with
the same key, vanish without a word (the hub reaps it), or stall (keep heart-beating,
stop working: the hub's watchdog frees its shard).
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections import Counter
from enum import Enum
from typing import Callable, Sequence

import zmq

from computeshare_desktop.errors import HubStoppedError
from computeshare_desktop.events import Event, Joined, PairedWith, Pushed, Rejoining, Resync
from computeshare_desktop.protocol import RejectCode, decode
from computeshare_desktop.protocol.messages import Ack, Model, Reject, ShardData
from computeshare_desktop.protocol.ports import HubPorts
from computeshare_desktop.protocol.wire import Frame
from computeshare_desktop.transport import Identity, ReqChannel
from computeshare_desktop.worker import WorkerCore, WorkerOptions
from computeshare_desktop.worker.driver import WorkerDriver
from computeshare_desktop.worker.liveness import read_beat
from testbed.fake_compute import FakeFactory

# Each simulated worker would say what a real worker tells its user (a full session, a
# rejoin, the hub's stop): the soak counts those instead.
logging.getLogger("computeshare_desktop.worker").setLevel(logging.ERROR)

DEVICE = "cpu (simulated)"
PULL_WAIT_MS = 2000  # as a real worker's long-poll
PAIRING_MESSAGE_BYTES = 4096  # as the real pairing channel (ZmqConnector.pairing)
STALL_LIMIT_S = 90.0  # a stalled worker the hub never frees is an error after this long
STALL_POLL_S = 0.2  # how often a stalled worker looks whether the hub has forgotten it
FOREVER_S = 1e9  # a full session is asked again for as long as the soak runs
# Refusals a worker meets in a churning session; any other one is an error of the soak.
EXPECTED = {RejectCode.STALE, RejectCode.DUPLICATE, RejectCode.NOT_TRAINING,
            RejectCode.SESSION_FULL, RejectCode.UNKNOWN_WORKER}
PAIRING_RETRIES = {RejectCode.BUSY.value: "pairing_busy",  # the core starts a fresh run
                   RejectCode.UNKNOWN_CHALLENGE.value: "pairing_evicted"}


class Leave(str, Enum):
    """How the churn makes a worker go."""

    BYE = "bye"  # say goodbye; a newcomer with a fresh key pairs in its place
    REJOIN = "rejoin"  # say goodbye, then join again at once with the same key (no PIN)
    VANISH = "vanish"  # close the sockets mid-request without a word: the hub must reap it
    STALL = "stall"  # keep heart-beating but stop pulling: the watchdog must free its shard


class Phase(str, Enum):
    """Where a worker is."""

    PAIRING = "pairing"  # running SPAKE2 with the PIN
    JOINING = "joining"  # asking for a shard (the session may be full for a while)
    TRAINING = "training"  # has had a push accepted since it last joined
    LEAVING = "leaving"  # told to leave
    GONE = "gone"  # its thread has ended


class Kind(enum.Enum):
    """Which of a worker's channels."""

    PAIRING = "pairing"  # unencrypted, SPAKE2 with the PIN
    REQUESTS = "requests"  # the driver's requests (join, pull, push, goodbye)
    BEAT = "beat"  # the driver's heartbeat (its own thread)


class _Gone(Exception):
    """The worker ends now (it vanished, stalled until freed, or the hub stopped)."""


class SoakError(RuntimeError):
    """A finding of the soak (an unexpected refusal, a stall never freed)."""


class Tally:
    """Counters and errors shared by every worker (thread-safe)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.errors: list[str] = []
        self.version = -1  # the newest model version any worker received
        self._lock = threading.Lock()

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] += n

    def error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)

    def saw(self, version: int) -> None:
        with self._lock:
            self.version = max(self.version, version)


class SimWorker(threading.Thread):
    """One simulated worker; ``leave`` asks it to go (see ``Leave``)."""

    def __init__(self, ctx: zmq.Context, host: str, port: int, pin: str, name: str,
                 tally: Tally, *, seed: int, source: str, heartbeat_s: float = 1.0,
                 timeout_s: float = 30.0) -> None:
        """``source``: the loopback address (127.x.y.z) its connections come from, its own
        as a machine's on a LAN would be (the hub limits pairing per address)."""
        super().__init__(name=f"soak-{name}", daemon=True)
        self.ctx, self.host, self.port, self.pin = ctx, host, port, pin
        self.source = source
        self.worker_name, self.tally = name, tally
        self.options = WorkerOptions(pin=pin, name=name, give_up_s=FOREVER_S,
                                     pull_wait_ms=PULL_WAIT_MS, heartbeat_s=heartbeat_s,
                                     request_timeout_s=timeout_s)
        self.identity = Identity.generate()
        self.hub_key: str | None = None
        self.phase = Phase.PAIRING
        self.leaving: Leave | None = None
        self.last_ack = 0.0  # monotonic time of its latest accepted push
        self.model_version = 0  # of the latest model received (the gradient's sign)
        ms_per_sample = 0.02 + 0.01 * (seed % 4)  # what it reports: the planner balances
        self.factory = FakeFactory(None, seed=seed, seconds=0.0, sample_s=ms_per_sample / 1000,
                                   version=lambda: self.model_version, record=False)
        self._driver: WorkerDriver | None = None
        self._forgotten = False  # a ping was answered UNKNOWN_WORKER

    def leave(self, how: Leave) -> None:
        """Ask the worker to go: the driver's own leave for a goodbye; VANISH stops it
        at once, without a word; STALL holds its next request (``SoakChannel``)."""
        self.leaving = how
        self.phase = Phase.LEAVING
        self.tally.add(f"leave_{how.value}")
        driver = self._driver
        if driver is not None and how in (Leave.BYE, Leave.REJOIN):
            driver.leave()
        elif driver is not None and how is Leave.VANISH:
            driver.stop.set()  # wakes every wait; the channels then send nothing more

    @property
    def vanished(self) -> bool:
        return self.leaving is Leave.VANISH

    # ----------------------------------------------------------------- life
    def run(self) -> None:
        try:
            while self._session():
                pass
        except _Gone:
            pass
        except Exception as exc:  # noqa: BLE001 - every failure is a finding of the soak
            self.tally.error(f"{self.worker_name}: {exc!r}")
        finally:
            self.phase = Phase.GONE

    def _session(self) -> bool:
        """One driver from its start (pairing, or joining with the remembered key) to its
        end; True to join again with the same key (REJOIN)."""
        core = WorkerCore(self.options, device=DEVICE, worker_key=self.identity.public,
                          hub_key=self.hub_key)
        stop = threading.Event()
        self._forgotten = False
        self._driver = WorkerDriver(core, SoakConnector(self), self.factory, self.options,
                                    self._saw, stop=stop,
                                    wait=lambda seconds: self._wait(stop, seconds))
        if self.leaving is not None:  # told to go before this driver could hear it
            raise _Gone()
        try:
            self._driver.run()
        except HubStoppedError:
            raise _Gone() from None
        except (_Gone, SoakError):
            raise
        except Exception:
            if self.leaving is None:  # a refusal or an error nobody asked for
                raise
        if self.leaving is Leave.REJOIN:  # a restarted worker: new connections, the same key
            self.leaving = None
            return True
        return False

    def _wait(self, stop: threading.Event, seconds: float) -> bool:
        """The driver's waits (a back-off, a pause the hub asked for): cut short by its
        stop; a worker told to vanish ends there."""
        stopped = stop.wait(seconds)
        if self.vanished:
            raise _Gone()
        return stopped

    def stall(self, abort: Callable[[], bool] | None) -> None:
        """Hold the next request while the heartbeat goes on, until the hub says it no
        longer knows this worker (then end); SoakError if it never does."""
        until = time.monotonic() + STALL_LIMIT_S
        while not self._forgotten:
            if self.vanished or (abort is not None and abort()):  # the hub stopped meanwhile
                raise _Gone()
            if time.monotonic() > until:
                raise SoakError("stalled worker never freed by the hub's watchdog")
            time.sleep(STALL_POLL_S)
        self.tally.add("stall_freed")
        raise _Gone()

    # ----------------------------------------------------------------- what it saw
    def _saw(self, event: Event) -> None:
        core = self._driver.core if self._driver is not None else None
        if isinstance(event, PairedWith) and core is not None:
            self.hub_key = core.hub_key
            self.tally.add("paired")
        elif isinstance(event, Joined):
            self.tally.add("joined")
            self.phase = Phase.JOINING if self.leaving is None else self.phase
        elif isinstance(event, Rejoining) and self.leaving is None:
            self.tally.add("forgotten")  # reaped or freed while alive: join again
            self.phase = Phase.JOINING
        elif isinstance(event, Resync):  # its copy of the model was not the hub's: a finding
            self.tally.add("resyncs")
        elif isinstance(event, Pushed) and core is not None \
                and isinstance(core.last_reply, Ack):
            self.tally.add("pushed")
            self.last_ack = time.monotonic()
            if self.leaving is None:
                self.phase = Phase.TRAINING

    def count(self, kind: Kind, frames: list[bytes]) -> None:
        """Tally one reply (its header, the bytes of a shard chunk, a heartbeat's answer);
        an unexpected refusal is an error of the soak."""
        if kind is Kind.BEAT:
            said = read_beat(frames)
            if said.alive:
                self.tally.add("pongs")
            self._forgotten = self._forgotten or said.forgotten
            return
        reply, _ = decode(frames)
        if isinstance(reply, Reject):
            if kind is Kind.PAIRING:
                if reply.code in PAIRING_RETRIES:
                    self.tally.add(PAIRING_RETRIES[reply.code])
                return
            if reply.code == RejectCode.HUB_STOPPED.value:
                return
            self.tally.add(f"reject_{reply.code}")
            if reply.code not in {c.value for c in EXPECTED}:
                raise SoakError(f"unexpected refusal {reply.code}: {reply.detail}")
        elif isinstance(reply, Model):
            self.model_version = reply.version
            self.tally.saw(reply.version)
            self.tally.add("models")
        elif isinstance(reply, ShardData):
            self.tally.add("shard_bytes", sum(len(f) for f in frames[1:]))


class SoakChannel:
    """A driver's channel as the soak runs it: the transport's ``ReqChannel``, with each
    reply tallied and the churn carried out. A worker told to vanish sends nothing more
    (told between two requests, it would otherwise still send one, a goodbye among them,
    and the hub would not have to reap it); a stalled one holds its next request."""

    def __init__(self, worker: SimWorker, kind: Kind, inner: ReqChannel) -> None:
        self.worker, self.kind, self.inner = worker, kind, inner

    def request(self, frames: Sequence[Frame], timeout_s: float,
                keep_waiting: Callable[[], bool] | None = None,
                abort: Callable[[], bool] | None = None) -> list[bytes]:
        """The reply, as ``ReqChannel.request``; ends the worker (``_Gone``) when it
        vanishes or has stalled until freed."""
        worker, beat = self.worker, self.kind is Kind.BEAT
        if worker.vanished:
            raise InterruptedError() if beat else _Gone()  # the heartbeat's thread: quietly
        if worker.leaving is Leave.STALL and self.kind is Kind.REQUESTS:
            worker.stall(abort)
        try:
            reply = self.inner.request(
                frames, timeout_s, keep_waiting,
                lambda: worker.vanished or (abort is not None and abort()))
        except InterruptedError:
            if worker.vanished and not beat:
                raise _Gone() from None
            raise
        except TimeoutError:
            worker.tally.add("ping_timeouts" if beat else "timeouts")
            raise
        worker.count(self.kind, reply)
        return reply

    def close(self) -> None:
        self.inner.close()

    @property
    def bytes_sent(self) -> int:
        return self.inner.bytes_sent

    @property
    def bytes_received(self) -> int:
        return self.inner.bytes_received


class SoakConnector:
    """A simulated worker's channels to the hub, from its own loopback address, on the
    swarm's shared context; the heartbeat's channel is the one its own thread asks for."""

    def __init__(self, worker: SimWorker) -> None:
        self.worker = worker
        self.host, self.port = worker.host, worker.port  # the driver's closed-hub check

    @property
    def public_key(self) -> str:
        return self.worker.identity.public

    def pairing(self) -> SoakChannel:
        inner = ReqChannel(self._endpoint(HubPorts.at(self.port).pairing),
                           max_message_bytes=PAIRING_MESSAGE_BYTES, ctx=self.worker.ctx)
        return SoakChannel(self.worker, Kind.PAIRING, inner)

    def channel(self, server_key: str) -> SoakChannel:
        kind = Kind.REQUESTS if threading.current_thread() is self.worker else Kind.BEAT
        inner = ReqChannel(self._endpoint(self.port), server_key=server_key,
                           identity=self.worker.identity, ctx=self.worker.ctx)
        return SoakChannel(self.worker, kind, inner)

    def _endpoint(self, port: int) -> str:
        return f"tcp://{self.worker.source}:0;{self.host}:{port}"
