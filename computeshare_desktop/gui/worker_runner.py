"""Runs one WorkerSession on a background thread, like ``computeshare join``. No Qt.

The thread owns every ZeroMQ socket of the worker (the session makes and closes them). It
reports through ``events``, a queue of plain dicts the GUI drains on its own timer; each
event carries ``source`` so a hub window can tell its local worker's events apart.

Once joined, a worker of its own (``follow_hub``) also listens to the hub's event stream
(an ``EventSubscriber``: its own thread and CURVE SUB socket, keyed by the pairing) and
forwards those events into the same queue with ``source="feed"``: accuracy, every
worker's counters, the final result. The worker thread starts it on "joined" and closes it
when the session ends, however it ends.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any, Callable

from ..errors import ComputeShareError, HubStoppedError, HubUnreachableError, RejectedError
from ..protocol.pake import key_fingerprint
from ..transport import (EventSubscriber, KnownHubs, ZmqConnector, first_reachable,
                         identity_path, load_or_create)
from ..worker import DeviceChoice, WorkerOptions, WorkerResult, WorkerSession, pick_device
from .formatting import refusal_message
from .options import JoinTarget

log = logging.getLogger(__name__)

FEED = "feed"  # the ``source`` of events relayed from the hub's event stream
FINISHED_GRACE_S = 3.0  # after the hub's Done, how long to wait for its "finished" event


class WorkerRunner:
    """One worker session on its own thread: ``start()``, then ``stop()`` and ``join()``."""

    def __init__(self, target: JoinTarget, *, pin: str, name: str,
                 device: DeviceChoice | None = None, source: str = "worker",
                 events: "queue.SimpleQueue[dict[str, Any]] | None" = None,
                 first_contact_s: float = 15.0,
                 on_exit: Callable[[], None] | None = None,
                 follow_hub: bool | None = None) -> None:
        """``follow_hub``: relay the hub's events too (default: for a remote worker, not
        for a hub's own local worker, whose window already has them)."""
        self.target, self.pin, self.name, self.source = target, pin, name, source
        self.device = device
        self.events: queue.SimpleQueue[dict[str, Any]] = events or queue.SimpleQueue()
        self.first_contact_s = first_contact_s
        self.result: WorkerResult | None = None
        self.error_code: str | None = None
        self._on_exit = on_exit
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._session: WorkerSession | None = None
        self.follow_hub = source == "worker" if follow_hub is None else follow_hub
        self._feed: EventSubscriber | None = None  # made and closed on the worker thread
        self._feed_key: str | None = None
        self._connector: ZmqConnector | None = None
        self._hub_finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"gui-{source}", daemon=True)

    # ----------------------------------------------------------------- GUI thread
    def start(self) -> "WorkerRunner":
        """Start the worker thread; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the worker to leave the session (returns at once)."""
        with self._lock:
            self._stop.set()
            if self._session is not None:
                self._session.stop.set()

    def join(self, timeout_s: float) -> bool:
        """Wait for the thread; True when it has ended."""
        if self._thread.ident is not None:
            self._thread.join(timeout_s)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        """True while the worker thread is alive."""
        return self._thread.is_alive()

    @property
    def stopping(self) -> bool:
        """True once ``stop()`` was called."""
        return self._stop.is_set()

    def drain(self) -> list[dict[str, Any]]:
        """Every event queued since the last call (GUI thread)."""
        return drain_queue(self.events)

    def traffic(self) -> tuple[int, int]:
        """(bytes sent, bytes received) on the encrypted channel so far."""
        channel = getattr(self._session, "channel", None)
        return (int(getattr(channel, "bytes_sent", 0)), int(getattr(channel, "bytes_received", 0)))

    # ----------------------------------------------------------------- worker thread
    def _run(self) -> None:
        try:
            self._work()
        except RejectedError as exc:
            code = getattr(exc.code, "value", str(exc.code))
            self.error_code = code
            self._post("error", code=code, message=refusal_message(code, exc.detail))
        except HubStoppedError:
            self.error_code = "HUB_STOPPED"  # the session's "hub_stopped" event says it
        except HubUnreachableError as exc:
            if not self._stop.is_set():
                self.error_code = "UNREACHABLE"
                self._post("error", code="UNREACHABLE", message=str(exc))
        except ComputeShareError as exc:
            self.error_code = "ERROR"
            self._post("error", code="ERROR", message=str(exc))
        except Exception as exc:  # a bug: keep the app alive and show it
            log.exception("worker thread failed")
            self.error_code = "ERROR"
            self._post("error", code="ERROR", message=f"unexpected error: {exc!r}")
        finally:
            self._close_feed()
            self._post("stopped", left=self._stop.is_set(), result=self.result is not None)
            if self._on_exit is not None:
                self._on_exit()

    def _work(self) -> None:
        device = self.device or pick_device("auto")
        self._post("device", description=device.description, note=device.note)
        identity = load_or_create(identity_path("worker", self.name))
        t = self.target
        host = first_reachable(t.hosts, t.pair_port or t.port + 2) if len(t.hosts) > 1 \
            else t.host
        connector = ZmqConnector(host, t.port, identity, pair_port=t.pair_port)
        self._connector = connector
        options = WorkerOptions(pin=self.pin, name=self.name,
                                first_contact_s=self.first_contact_s)
        known = KnownHubs(identity_path("worker", self.name))
        session = WorkerSession(connector, options, device, on_event=self._on_event,
                                expected_key=t.expected_key, hub_key=known_hub_key(t, known))

        def remember(event: dict[str, Any]) -> None:  # a restart rejoins without the PIN
            if event["kind"] == "joined" and session.hub_key:
                known.remember(session.hub_key, f"{host}:{t.port}")

        session.sinks.append(remember)
        with self._lock:
            self._session = session
            if self._stop.is_set():
                session.stop.set()
        self.result = session.run()

    def _on_event(self, event: dict[str, Any]) -> None:
        if event["kind"] == "joined" and self._session is not None:
            welcome = self._session.welcome
            event = {**event, "batch_size": welcome.batch_size if welcome else 0}
            self._follow(self._session)
        elif event["kind"] == "done":
            event = {**event, "left": self._stop.is_set()}
        self.events.put({**event, "source": self.source})

    def _post(self, kind: str, **data: Any) -> None:
        self.events.put({"kind": kind, "source": self.source, **data})

    # ----------------------------------------------------------------- the hub's events
    def _follow(self, session: WorkerSession) -> None:
        """Subscribe to the hub's events (worker thread, on each "joined")."""
        if not self.follow_hub or session.hub_key is None:
            return
        if self._feed is not None and self._feed_key == session.hub_key:
            return  # a rejoin with the same hub: the subscription still stands
        self._close_feed()
        c = self._connector
        if c is None:
            return
        try:
            self._feed = EventSubscriber(c.host, c.port + 1, c.identity, session.hub_key,
                                         self._on_hub_event).start()
            self._feed_key = session.hub_key
        except Exception:  # best-effort: the worker trains on without the hub's view
            log.exception("could not follow the hub's events")
            self._feed = None

    def _on_hub_event(self, event: dict[str, Any]) -> None:
        """On the subscriber's thread: relay one hub event."""
        self.events.put({**event, "source": FEED})
        if event.get("kind") == "finished":
            self._hub_finished.set()
        elif event.get("kind") == "hub_stopped" and self._session is not None:
            version = event.get("version")  # the worker may be computing: end it now
            self._session.hub_said_stopped(version if isinstance(version, int) else -1)

    def _close_feed(self) -> None:
        feed, self._feed, self._feed_key = self._feed, None, None
        if feed is None:
            return
        if self.result is not None and not self._stop.is_set():
            self._hub_finished.wait(FINISHED_GRACE_S)  # the hub's final accuracy is on its way
        feed.close()


def known_hub_key(target: JoinTarget, known: KnownHubs) -> str | None:
    """The key of ``target``'s hub if this worker joined it before (then no PIN is needed):
    by the advertised key's fingerprint, else by the address."""
    if target.expected_key:
        return known.key_with_fingerprint(target.expected_key, key_fingerprint)
    return next((key for host in (target.host, *target.hosts)
                 if (key := known.key_for(f"{host}:{target.port}"))), None)


def remembers(target: JoinTarget, name: str) -> bool:
    """True when the worker called ``name`` has joined ``target``'s hub before."""
    return known_hub_key(target, KnownHubs(identity_path("worker", name))) is not None


def drain_queue(events: "queue.SimpleQueue[dict[str, Any]]") -> list[dict[str, Any]]:
    """Everything in ``events`` right now, without blocking."""
    items: list[dict[str, Any]] = []
    while True:
        try:
            items.append(events.get_nowait())
        except queue.Empty:
            return items
