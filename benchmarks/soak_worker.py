"""Lightweight simulated workers for the soak benchmark: the real protocol, no training.

A ``SimWorker`` is one thread that drives the package's own ``WorkerCore`` (the protocol a
real worker speaks: SPAKE2 pairing, joining, the shard, the model copy with its deltas,
pushes through the codecs) over real ZeroMQ: a plain REQ socket to pair with the PIN, then
two CURVE REQ sockets (requests, heartbeats). It is a driver of that core like
``worker/driver.py``, with the soak's own policies: a fixed timeout and a few retries, a
heartbeat polled on the same thread, and a tally of what it saw. Instead of computing, it
hands the core one fixed random gradient of the model's size (N(0, 1e-3)), its sign
alternating with the version: the hub decodes, averages and steps for real, and the weights
oscillate instead of drifting, so they stay finite however long the soak runs.

The soak's churn tells a worker how to go (``Leave``): say goodbye, rejoin at once with
the same key, vanish without a word (the hub reaps it), or stall (keep heart-beating,
stop working: the hub's watchdog frees its shard).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from enum import Enum
from functools import lru_cache
from typing import Any, Callable

import torch
import zmq

from computeshare_desktop.data import dataset_info
from computeshare_desktop.errors import HubStoppedError
from computeshare_desktop.events import Event, Joined, PairedWith, Pushed, Rejoining, Resync
from computeshare_desktop.models import build_model, parameter_count
from computeshare_desktop.protocol import RejectCode, decode, encode
from computeshare_desktop.protocol.messages import Ack, Model, Ping, Reject, ShardData
from computeshare_desktop.protocol.ports import HubPorts
from computeshare_desktop.transport import Identity
from computeshare_desktop.transport.curve import curve_client
from computeshare_desktop.worker import WorkerCore, WorkerOptions
from computeshare_desktop.worker.compute import Update
from computeshare_desktop.worker.effects import (Effect, Emit, Finish, Goodbye, Load, Prepare,
                                                 Send, WaitUntil, Work)
from computeshare_desktop.worker.liveness import read_beat

# Each simulated worker would say what a real worker tells its user (a full session, a
# rejoin, the hub's stop): the soak counts those instead.
logging.getLogger("computeshare_desktop.worker").setLevel(logging.ERROR)

PULL_WAIT_MS = 2000  # as a real worker's long-poll
RETRIES = 5  # a request that times out is sent again this many times (Lazy Pirate)
STALL_LIMIT_S = 90.0  # a stalled worker the hub never frees is an error after this long
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


class _Gone(Exception):
    """The worker ends now (it vanished, or the hub stopped)."""


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


@lru_cache(maxsize=8)
def model_size(model: str, dataset: str) -> int:
    """Trainable values of a registry model (what the hub's weights hold)."""
    return parameter_count(build_model(model, dataset_info(dataset)))


class FixedGradient:
    """The soak's compute: one fixed random gradient, its sign alternating with ``version``."""

    def __init__(self, numel: int, seed: int, ms_per_sample: float) -> None:
        self.numel = numel
        self.device = torch.device("cpu")
        self.version = 0  # of the model being worked on (the driver sets it)
        self.ms_per_sample = ms_per_sample
        self._grad = torch.randn(numel, generator=torch.Generator().manual_seed(seed)) * 1e-3

    def gradient(self, weights: torch.Tensor, start: int, batch: int) -> Update:
        sign = 1 if self.version % 2 == 0 else -1
        return Update(sign * self._grad, 0.5, batch, batch * self.ms_per_sample / 1000)

    def local_steps(self, weights: torch.Tensor, start: int, batch: int, steps: int,
                    lr: float, *, momentum: float = 0.0,
                    velocity: torch.Tensor | None = None) -> Update:
        one = self.gradient(weights, start, batch)
        return Update(one.flat * lr * steps, one.loss, batch * steps, one.seconds * steps)


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
        self.worker_name, self.tally, self.seed = name, tally, seed
        self.heartbeat_s, self.timeout_s = heartbeat_s, timeout_s
        self.identity = Identity.generate()
        self.hub_key: str | None = None
        self.phase = Phase.PAIRING
        self.leaving: Leave | None = None
        self.last_ack = 0.0  # monotonic time of its latest accepted push
        self._core: WorkerCore | None = None
        self._compute: FixedGradient | None = None
        self._pairing: zmq.Socket | None = None
        self._main: zmq.Socket | None = None
        self._beat: zmq.Socket | None = None
        self._beat_sent: float | None = None  # when the ping in flight went out
        self._next_beat = 0.0
        self._forgotten = False  # a ping was answered UNKNOWN_WORKER
        self._ms_per_sample = 0.02 + 0.01 * (seed % 4)  # what it reports: the planner balances

    def leave(self, how: Leave) -> None:
        """Ask the worker to go (it acts between requests; VANISH at once)."""
        self.leaving = how
        self.phase = Phase.LEAVING
        self.tally.add(f"leave_{how.value}")

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
            self._close()
            self.phase = Phase.GONE

    def _session(self) -> bool:
        """One core from its start (pairing, or joining with the remembered key) to its
        end; True to join again with the same key."""
        options = WorkerOptions(pin=self.pin, name=self.worker_name, give_up_s=FOREVER_S,
                                pull_wait_ms=PULL_WAIT_MS)
        core = WorkerCore(options, device="cpu (simulated)", worker_key=self.identity.public,
                          hub_key=self.hub_key)
        self._core, self._forgotten = core, False
        effects = core.start(time.monotonic())
        while True:
            *events, action = effects
            for effect in events:
                assert isinstance(effect, Emit)
                self._saw(effect.event)
            if isinstance(action, Finish):
                return self._finished(action)
            effects = self._carry_out(core, action)

    def _carry_out(self, core: WorkerCore, action: Any) -> list[Effect]:
        match action:
            case Send():
                return self._input(core.replied, self._send(action))
            case Prepare():
                return self._input(core.prepared)
            case Load():
                numel = model_size(action.welcome.model, action.welcome.dataset)
                self._compute = FixedGradient(numel, self.seed, self._ms_per_sample)
                return self._input(core.loaded, numel, self._compute.device)
            case Work():
                assert self._compute is not None and isinstance(core.last_reply, Model)
                self._compute.version = core.last_reply.version
                return self._input(core.computed, action.task.run(self._compute))
            case WaitUntil():
                self._pause(action.at - time.monotonic())
                return self._input(core.woke)
            case Goodbye():
                if self.leaving is Leave.STALL:
                    self._stall()
                    raise _Gone()
                self._send(action.send)
                return self._input(core.said_goodbye)
        raise AssertionError(f"no way to carry out {action!r}")

    def _input(self, step: Callable[..., list[Effect]], *args: Any) -> list[Effect]:
        """Feed the core, after telling it that the churn asked the worker to go (not one
        that vanishes: it would say goodbye)."""
        assert self._core is not None
        if self.leaving is not None and self.leaving is not Leave.VANISH:
            self._core.leave()
        return step(*args, time.monotonic())

    def _finished(self, finish: Finish) -> bool:
        """The core ended: join again for a REJOIN, else end the thread (cleanly unless a
        refusal or an error ended it while nobody asked the worker to go)."""
        if isinstance(finish.error, HubStoppedError):
            raise _Gone()
        if finish.error is not None and self.leaving is None:
            raise finish.error
        if self.leaving is Leave.REJOIN:  # a restarted worker: new connections, the same key
            self._close()
            self.leaving = None
            return True
        return False

    def _stall(self) -> None:
        """Heartbeats only, until the hub says it no longer knows this worker."""
        until = time.monotonic() + STALL_LIMIT_S
        while not self._forgotten:
            if time.monotonic() > until:
                raise RuntimeError("stalled worker never freed by the hub's watchdog")
            self._pause(0.2)
        self.tally.add("stall_freed")

    # ----------------------------------------------------------------- what it saw
    def _saw(self, event: Event) -> None:
        if isinstance(event, PairedWith):
            assert self._core is not None
            self.hub_key = self._core.hub_key
            self.tally.add("paired")
        elif isinstance(event, Joined):
            self.tally.add("joined")
            self.phase = Phase.JOINING if self.leaving is None else self.phase
        elif isinstance(event, Rejoining) and self.leaving is None:
            self.tally.add("forgotten")  # reaped or freed while alive: join again
            self.phase = Phase.JOINING
        elif isinstance(event, Resync):  # its copy of the model was not the hub's: a finding
            self.tally.add("resyncs")
        elif isinstance(event, Pushed) and self._core is not None \
                and isinstance(self._core.last_reply, Ack):
            self.tally.add("pushed")
            self.last_ack = time.monotonic()
            if self.leaving is None:
                self.phase = Phase.TRAINING

    def _count(self, send: Send, frames: list[bytes]) -> None:
        """Tally one reply (its header, the bytes of a shard chunk); an unexpected refusal
        is an error of the soak."""
        reply, _ = decode(frames)
        if isinstance(reply, Reject):
            if send.hub_key is None:
                if reply.code in PAIRING_RETRIES:
                    self.tally.add(PAIRING_RETRIES[reply.code])
                return
            if reply.code == RejectCode.HUB_STOPPED.value:
                return
            self.tally.add(f"reject_{reply.code}")
            if reply.code not in {c.value for c in EXPECTED}:
                raise RuntimeError(f"unexpected refusal {reply.code}: {reply.detail}")
        elif isinstance(reply, Model):
            self.tally.saw(reply.version)
            self.tally.add("models")
        elif isinstance(reply, ShardData):
            self.tally.add("shard_bytes", sum(len(f) for f in frames[1:]))

    # ----------------------------------------------------------------- requests
    def _send(self, send: Send) -> list[bytes]:
        """One request: on the pairing socket (one try), or on the request socket, sent
        again after a timeout (RETRIES times); the reply's frames. A worker told to vanish
        sends nothing more: told between two requests, it would otherwise still send one,
        a goodbye among them, and the hub would not have to reap it."""
        if self.leaving is Leave.VANISH:
            raise _Gone()
        if send.hub_key is None:
            frames = self._ask_pairing(send.frames)
        else:
            self._close_pairing()
            frames = self._call(send.frames)
        self._count(send, frames)
        return frames

    def _ask_pairing(self, frames: list[Any]) -> list[bytes]:
        if self._pairing is None:
            self._pairing = self.ctx.socket(zmq.REQ)
            self._pairing.setsockopt(zmq.LINGER, 0)
            self._pairing.connect(self._endpoint(HubPorts.at(self.port).pairing))
        self._pairing.send_multipart(frames)
        if not self._wait(self._pairing):
            raise TimeoutError("no pairing reply")
        return self._pairing.recv_multipart()

    def _call(self, frames: list[Any]) -> list[bytes]:
        for _ in range(RETRIES + 1):
            sock = self._main_socket()
            sock.send_multipart(frames, copy=False)
            if self._wait(sock):
                return sock.recv_multipart()
            self._reset_main()
            self.tally.add("timeouts")
        raise TimeoutError(f"no reply after {RETRIES + 1} tries")

    def _wait(self, sock: zmq.Socket) -> bool:
        """True when a reply is ready within timeout_s; heart-beats meanwhile, and gives up
        at once when told to vanish."""
        deadline = time.monotonic() + self.timeout_s
        while (now := time.monotonic()) < deadline:
            if self.leaving is Leave.VANISH:
                raise _Gone()
            self._heartbeat(now)
            wait = min(deadline, self._next_beat, now + 0.25) - now
            if sock.poll(max(1, int(wait * 1000))):
                return True
        return False

    def _pause(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while (now := time.monotonic()) < until:
            if self.leaving is Leave.VANISH:
                raise _Gone()
            self._heartbeat(now)
            time.sleep(min(0.05, until - now))

    def _heartbeat(self, now: float) -> None:
        """Collect the pong in flight; send a ping when one is due (after joining)."""
        token = self._core.token if self._core is not None else None
        if token is None:
            return
        beat = self._beat_socket()
        if self._beat_sent is not None:
            if beat.poll(0):
                said = read_beat(beat.recv_multipart())
                self._beat_sent = None
                if said.alive:
                    self.tally.add("pongs")
                elif said.stopped is not None:
                    raise _Gone()
                elif said.forgotten:
                    self._forgotten = True
            elif now - self._beat_sent > self.timeout_s:
                self.tally.add("ping_timeouts")
                self._close_beat()
            return
        if now >= self._next_beat:
            beat.send_multipart(encode(Ping(token=token)))
            self._beat_sent, self._next_beat = now, now + self.heartbeat_s

    # ----------------------------------------------------------------- sockets
    def _curve(self) -> zmq.Socket:
        assert self.hub_key is not None
        sock = curve_client(self.ctx, zmq.REQ, self.hub_key, self.identity)
        sock.connect(self._endpoint(self.port))
        return sock

    def _endpoint(self, port: int) -> str:
        return f"tcp://{self.source}:0;{self.host}:{port}"

    def _main_socket(self) -> zmq.Socket:
        if self._main is None:
            self._main = self._curve()
        return self._main

    def _beat_socket(self) -> zmq.Socket:
        if self._beat is None:
            self._beat = self._curve()
        return self._beat

    def _reset_main(self) -> None:
        if self._main is not None:
            self._main.close(0)
            self._main = None

    def _close_pairing(self) -> None:
        if self._pairing is not None:
            self._pairing.close(0)
            self._pairing = None

    def _close_beat(self) -> None:
        if self._beat is not None:
            self._beat.close(0)
            self._beat, self._beat_sent = None, None

    def _close(self) -> None:
        self._close_pairing()
        self._reset_main()
        self._close_beat()
