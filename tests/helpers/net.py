"""Shared helpers for tests that run a real hub on loopback (threads or processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, TypeVar, overload

import zmq

from computeshare_desktop.events import Event, RoundClosed, from_wire
from computeshare_desktop.hub import HubConfig, HubResult, HubSession
from computeshare_desktop.protocol import decode, encode
from computeshare_desktop.protocol.messages import Paired, PairFinish, PairReply, PairStart
from computeshare_desktop.protocol.pake import WorkerPairing
from computeshare_desktop.protocol.ports import HubPorts
from computeshare_desktop.transport import (EVENT_TOPIC, HubServer, Identity, ReqChannel,
                                            ZmqConnector)
from computeshare_desktop.transport.curve import curve_client
from computeshare_desktop.transport.sockets import configure
from computeshare_desktop.worker import WorkerOptions, WorkerSession, pick_device
from testbed.ports import free_ports  # noqa: F401  (the tests import it from here)

PIN = "246810"
E = TypeVar("E", bound=Event)


@overload
def of_kind(events: list[Event], kind: type[E]) -> list[E]: ...
@overload
def of_kind(events: list[Event], kind: str) -> list[Event]: ...
def of_kind(events: list[Event], kind: str | type[Event]) -> list[Any]:
    """The events of one kind, in order: by class, or by the class's ``kind`` string."""
    name = kind if isinstance(kind, str) else kind.kind
    return [e for e in list(events) if e.kind == name]


def wait_for(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Poll ``predicate`` until truthy; fail the test with ``what`` on timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


class EventLog:
    """What a test object heard, filtered by kind: ``of_kind(WorkerJoined)``."""

    events: list[Event]

    @overload
    def of_kind(self, kind: type[E]) -> list[E]: ...
    @overload
    def of_kind(self, kind: str) -> list[Event]: ...
    def of_kind(self, kind: str | type[Event]) -> list[Any]:
        return of_kind(self.events, kind)


class RunningHub(EventLog):
    """A HubSession served by a HubServer on 127.0.0.1 in a background thread."""

    def __init__(self, out_dir: Path, **config: Any) -> None:
        self.events: list[Event] = []
        self.identity = Identity.generate()
        self.session = HubSession(HubConfig(**config), pin=PIN, hub_key=self.identity.public,
                                  out_dir=out_dir, on_event=self.events.append)
        self.server = HubServer(self.session, self.identity, host="127.0.0.1", port=0)
        self.port = self.server.port
        self.ports = self.server.ports  # events, pairing: the next two
        self.address = f"tcp://127.0.0.1:{self.server.port}"
        self.stop = threading.Event()
        self.result: HubResult | None = None
        self.thread = threading.Thread(target=self._run, name="test-hub")
        self.thread.start()

    def _run(self) -> None:
        self.result = self.server.serve(self.stop, linger_s=3.0)

    def rounds(self) -> list[RoundClosed]:
        return of_kind(self.events, RoundClosed)

    def join(self, timeout_s: float = 120) -> HubResult | None:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "hub did not finish"
        return self.result

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.server.close()
        self.session.close()


class WorkerThread:
    """A real WorkerSession on the CPU in a background thread."""

    def __init__(self, port: int, name: str, *, pin: str = PIN,
                 session_cls: type[WorkerSession] = WorkerSession,
                 identity: Identity | None = None, hub_key: str | None = None,
                 **options: Any) -> None:
        opts = WorkerOptions(pin=pin, name=name, **options)
        self.events: list[Event] = []
        self.identity = identity or Identity.generate()
        connector = ZmqConnector("127.0.0.1", port, self.identity)
        self.session = session_cls(connector, opts, pick_device("cpu"),
                                   on_event=self.events.append, hub_key=hub_key)
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"test-worker-{name}")
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result = self.session.run()
        except BaseException as exc:  # surfaced by join()
            self.error = exc

    def join(self, timeout_s: float = 120) -> Any:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "worker did not finish"
        return self.result

    def close(self) -> None:
        self.session.stop.set()
        self.thread.join(15)


def train_session(out_dir: Path, workers: int = 2, timeout_s: float = 180,
                  **config: Any) -> tuple[RunningHub, list[WorkerThread]]:
    """A whole session on loopback: a RunningHub and ``workers`` WorkerThreads until the hub
    finishes; every worker must end without an error. All are closed when it returns."""
    hub = RunningHub(out_dir, workers=workers, **config)
    threads = [WorkerThread(hub.port, f"w{i}") for i in range(workers)]
    try:
        assert hub.join(timeout_s) is not None
        for w in threads:
            w.join(30)
            assert w.error is None, w.error
    finally:
        for w in threads:
            w.close()
        hub.close()
    return hub, threads


def pair(port: int, pin: str, name: str, identity: Identity,
         host: str = "127.0.0.1") -> tuple[Paired | Any, str | None]:
    """Run the SPAKE2 pairing by hand; (final reply, hub key if paired)."""
    channel = ReqChannel(f"tcp://{host}:{HubPorts.at(port).pairing}")
    try:
        run = WorkerPairing(pin)
        reply, _ = decode(channel.request(encode(PairStart(run.msg_a, name)), 5.0))
        if not isinstance(reply, PairReply):
            return reply, None
        proof = run.finish(reply.pair_id, reply.msg_b, identity.public, name)
        paired, _ = decode(channel.request(encode(PairFinish(reply.pair_id, identity.public,
                                                             proof)), 5.0))
        if not isinstance(paired, Paired):
            return paired, None
        run.verify_hub(paired.hub_key, paired.session_id, paired.proof)
        return paired, paired.hub_key
    finally:
        channel.close()


class Raw:
    """A bare REQ socket for sending hand-made (or hostile) frames.

    With ``identity`` and ``hub_key`` it speaks CURVE to the request port (as a paired
    worker would); without, it talks plain TCP to ``address``.
    """

    def __init__(self, address: str, *, identity: Identity | None = None,
                 hub_key: str | None = None) -> None:
        self.channel = ReqChannel(address, identity=identity, server_key=hub_key)

    def send(self, frames: list[bytes], timeout_s: float = 5.0) -> list[bytes]:
        return self.channel.request(frames, timeout_s)

    def close(self) -> None:
        self.channel.close()


class EventListener(EventLog):
    """SUB socket on the hub's event port, collecting events in a thread.

    ``raw`` holds every message as its JSON object; ``events`` the typed events they parse
    to (``from_wire``); ``bad`` the messages that would not parse (a wire bug) or that
    name a kind this version does not know.
    """

    def __init__(self, port: int, identity: Identity | None = None,
                 hub_key: str | None = None, host: str = "127.0.0.1") -> None:
        self.raw: list[Any] = []
        self.events: list[Event] = []
        self.bad: list[tuple[Any, str]] = []
        self._stop = threading.Event()
        self._ctx = zmq.Context()
        if identity is not None and hub_key is not None:
            self._sock = curve_client(self._ctx, zmq.SUB, hub_key, identity)
        else:
            self._sock = configure(self._ctx.socket(zmq.SUB))
        self._sock.setsockopt(zmq.SUBSCRIBE, EVENT_TOPIC)
        self._sock.connect(f"tcp://{host}:{port}")
        self._thread = threading.Thread(target=self._run, name="test-events")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._sock.poll(50):
                msg = self._sock.recv()
                data = json.loads(msg[len(EVENT_TOPIC) + 1:])
                self.raw.append(data)
                try:
                    event = from_wire(data)
                except ValueError as exc:
                    self.bad.append((data, str(exc)))
                    continue
                if event is None:
                    self.bad.append((data, "unknown kind"))
                else:
                    self.events.append(event)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close(0)
        self._ctx.term()


def cli(*args: str, env: dict[str, str] | None = None, **kwargs: Any) -> subprocess.Popen[str]:
    """Start ``computeshare ARGS`` as a real process."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "computeshare_desktop.cli", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=full_env, **kwargs)


def reap(*procs: subprocess.Popen[str]) -> None:
    """Kill the ``cli`` processes still running (a test timed out) and print what each said,
    so it shows with the failure."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            print(proc.args[3:5], *proc.communicate(), sep="\n")


def metrics(out_dir: Path) -> list[dict[str, Any]]:
    """The records of metrics.jsonl (empty if not there yet)."""
    path = out_dir / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
