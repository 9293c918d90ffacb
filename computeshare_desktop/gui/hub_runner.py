"""Runs a hub on a background thread, like ``computeshare host``, plus an optional local worker.

The hub thread builds the HubSession (dataset, model), binds the HubServer's sockets,
advertises the session on the LAN, serves until training is done or ``stop()`` is asked,
then withdraws the advert and closes every socket itself: ZeroMQ sockets never change
threads. "Also train on this machine" is an ordinary worker (``WorkerRunner``) on another
thread that pairs with the session PIN over 127.0.0.1, exactly like a remote one.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

from ..discovery import DiscoveryError
from ..discovery.advertiser import advertised_addresses
from ..discovery.hub_advert import HubAdvertising
from ..errors import ComputeShareError, PortInUseError
from ..hub import HubResult, HubSession
from ..protocol.auth import new_pin
from ..protocol.pake import key_fingerprint
from ..transport import DEFAULT_PORT, HubServer, Identity, identity_path, load_or_create
from ..worker import DeviceChoice
from .options import AppConfig, HostOptions, JoinTarget, worker_name
from .worker_runner import WorkerRunner, drain_queue

log = logging.getLogger(__name__)

LOCAL_WORKER_GRACE_S = 10.0  # a stopping local worker's last pull is answered within ~2 s


class HubRunner:
    """One hub session on its own thread: ``start()``, then ``stop()`` and ``join()``."""

    def __init__(self, options: HostOptions, *, pin: str, app: AppConfig | None = None,
                 device: DeviceChoice | None = None) -> None:
        self.options, self.pin, self.app = options, pin, app or AppConfig()
        self.config = options.config()  # ConfigError now, in the dialog, not in the thread
        self.out_path = options.output_path()
        self.device = device
        self.events: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self.port: int | None = None
        self.addresses: list[str] = []  # where workers can reach the hub, best first
        self.result: HubResult | None = None
        self.local: WorkerRunner | None = None
        self._server: HubServer | None = None  # while serving (its kick/PIN are thread-safe)
        self._lock = threading.Lock()
        self._stop_requested = threading.Event()
        self._serve_stop = threading.Event()  # what the serve loop watches
        self._thread = threading.Thread(target=self._run, name="gui-hub", daemon=True)

    # ----------------------------------------------------------------- GUI thread
    def start(self) -> "HubRunner":
        """Start the hub thread; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop training (returns at once): the local worker leaves first, then the hub."""
        with self._lock:
            self._stop_requested.set()
            local = self.local
        if local is not None and local.running:
            local.stop()  # its exit sets _serve_stop, so its last requests still get answers
        else:
            self._serve_stop.set()

    def kick(self, worker_id: int) -> None:
        """Remove a worker and ban its key for this session (returns at once)."""
        if self._server is not None:
            self._server.kick(worker_id)

    def rotate_pin(self) -> str | None:
        """A new session PIN (the old one stops working); None when not serving."""
        if self._server is None or not self.running:
            return None
        self.pin = new_pin()
        self._server.set_pin(self.pin)
        return self.pin

    def join(self, timeout_s: float) -> bool:
        """Wait for the hub (and local worker) threads; True when both have ended."""
        if self._thread.ident is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():  # a stuck local worker must not keep the hub up
                self._serve_stop.set()
                self._thread.join(timeout_s)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        """True while the hub thread is alive."""
        return self._thread.is_alive()

    @property
    def stopping(self) -> bool:
        """True once ``stop()`` was called."""
        return self._stop_requested.is_set()

    def drain(self) -> list[dict[str, Any]]:
        """Every event (hub and local worker) queued since the last call."""
        return drain_queue(self.events)

    # ----------------------------------------------------------------- hub thread
    def _run(self) -> None:
        session: HubSession | None = None
        server: HubServer | None = None
        advertising: HubAdvertising | None = None
        try:
            identity = load_or_create(identity_path("hub"))
            session = HubSession(self.config, pin=self.pin, hub_key=identity.public,
                                 out_dir=self.out_path, on_event=self._on_hub_event,
                                 resume=self.options.resume)
            server = self._server = self._listen(session, identity)
            advertising = self._advertise(session, identity, server.port)
            self._start_local_worker(server.port)
            self.result = server.serve(self._serve_stop)
            if self.result is None:  # stopped early: keep the model (a "stopped" event)
                session.save_stopped()
        except ComputeShareError as exc:
            self._post("error", message=str(exc))
        except Exception as exc:  # a bug: keep the app alive and show it
            log.exception("hub thread failed")
            self._post("error", message=f"unexpected error: {exc!r}")
        finally:
            self._shut_down(session, server, advertising)

    def _listen(self, session: HubSession, identity: Identity) -> HubServer:
        port = self.options.port
        try:
            server = HubServer(session, identity, host=self.app.bind, port=port)
        except PortInUseError:
            if port != DEFAULT_PORT:
                raise
            self._post("log", text=f"Port {port} is busy: listening on a free port instead.")
            server = HubServer(session, identity, host=self.app.bind, port=0)
        self.port = server.port
        self.addresses = self._addresses()
        self._post("listening", addresses=self.addresses, port=server.port,
                   pub_port=server.pub_port, pair_port=server.pair_port, bind=self.app.bind,
                   hub_key=key_fingerprint(identity.public), out_dir=str(session.out.path))
        return server

    def _addresses(self) -> list[str]:
        if self.app.bind not in ("0.0.0.0", ""):
            return [self.app.bind]
        try:
            return advertised_addresses(list(self.app.interfaces) if self.app.interfaces
                                        else None)
        except DiscoveryError:
            return []

    def _advertise(self, session: HubSession, identity: Identity,
                   port: int) -> HubAdvertising | None:
        if not self.options.advertise or self._serve_stop.is_set():
            return None
        name = self.options.session_name()
        interfaces = list(self.app.interfaces) if self.app.interfaces else None
        advertising = HubAdvertising(session, hub_key=identity.public, port=port, name=name,
                                     interfaces=interfaces)
        if not advertising.start():  # blocks ~1.7 s (mDNS probing), on this thread
            self._post("log", text="Not announced on the LAN (mDNS unavailable): workers "
                                   "can still connect by address.")
            return None
        self._post("advertising", name=name)
        return advertising

    def _start_local_worker(self, port: int) -> None:
        if not self.options.train_here:
            return
        target = JoinTarget(host="127.0.0.1", port=port, label="this machine")
        local = WorkerRunner(target, pin=self.pin, name=f"{worker_name()} (host)",
                             device=self.device, source="local", events=self.events,
                             on_exit=self._on_local_exit)
        with self._lock:
            if self._stop_requested.is_set():
                return
            self.local = local
        local.start()

    def _on_local_exit(self) -> None:
        if self._stop_requested.is_set():
            self._serve_stop.set()

    def _shut_down(self, session: HubSession | None, server: HubServer | None,
                   advertising: HubAdvertising | None) -> None:
        if advertising is not None:
            advertising.close()  # goodbye packets: browsers drop the session at once
        local = self.local
        if local is not None:
            if session is None or not session.done:  # no Done will come: tell it to leave
                local.stop()
            if not local.join(LOCAL_WORKER_GRACE_S):
                local.stop()
                local.join(LOCAL_WORKER_GRACE_S)
        if server is not None:
            server.close()
        if session is not None:
            session.close()
        self._post("closed")

    def _on_hub_event(self, event: dict[str, Any]) -> None:
        self.events.put({**event, "source": "hub"})

    def _post(self, kind: str, **data: Any) -> None:
        self.events.put({"kind": kind, "source": "hub", **data})
