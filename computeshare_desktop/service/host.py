"""Hosting a session, for the command line and the app alike. No Qt.

``HostService`` owns the hub's thread and the policies around it: the output folder (no
second session in one folder: hub/folder_lock.py's lock, held while the hub thread runs),
the PIN (given, else ``COMPUTESHARE_PIN``, else a random one), the port (a busy default
port falls back to any free one), the LAN advert, and "also train on this machine", an
ordinary worker (a ``JoinService``) on 127.0.0.1 whose key the hub allows before it starts:
it joins without pairing, so no flood of the pairing
port can keep the host's own machine from training. The hub thread builds the session,
binds the sockets, serves until training is done or ``stop()`` is asked, saves the model
and a checkpoint if it was stopped early, then withdraws the advert and closes every
socket itself: ZeroMQ sockets never change threads. When every worker refused the model
and nobody else came in time, a plan that ``end_when_refused`` (the command line's) stops
the session as a stop does and ends with AllRefusedError; the app's window waits on.

Views subscribe to its events (``Tagged``: ``source`` is "hub" or "local") through a
callback run on the service's threads, or drain them from ``events``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import Any, Callable

from ..data.folders import dataset_label
from ..discovery import DiscoveryError
from ..discovery.advertiser import advertised_addresses
from ..discovery.hub_advert import HubAdvertising
from ..errors import AllRefusedError, ComputeShareError, PortInUseError
from ..events import Advertising, Ended, Event, Failed, Listening, LogLine, RefusedWaitOver
from ..hub import HubResult, HubSession
from ..hub.blocked import RemovedMachine
from ..hub.folder_lock import FolderLock
from ..protocol.auth import check_pin, new_pin
from ..protocol.pake import key_fingerprint
from ..transport import DEFAULT_PORT, HubServer, Identity, identity_path, load_or_create
from ..join_options import JoinOptions
from .join import JoinService, join_plan
from .prepare import ProgressLines, prepare
from .threads import SERIAL, ServiceThread, Tagged
from .options import HOSTED, HostPlan, JoinTarget, check_output_folder
from .paired import blocked_machines, paired_machines

log = logging.getLogger(__name__)

PIN_ENV = "COMPUTESHARE_PIN"
LOCAL_WORKER_GRACE_S = 10.0  # a stopping local worker's last pull is answered within ~2 s


def choose_pin(given: str = "") -> str:
    """The session PIN: ``given``, else COMPUTESHARE_PIN, else a random 6-digit one."""
    return check_pin(given or os.environ.get(PIN_ENV) or new_pin())


def _failure(exc: Exception) -> ComputeShareError:
    """What the hub thread says of an error that is not a ComputeShareError: a file it
    could not write (the output folder: checked before, but it can change) by its name and
    cause, without a traceback; anything else is a bug, logged with its traceback."""
    if isinstance(exc, OSError) and exc.filename:
        log.warning("hub thread: %s", exc)
        return ComputeShareError(f"cannot write {exc.filename}: {exc.strerror or exc}")
    log.exception("hub thread failed")
    return ComputeShareError(f"unexpected error: {exc!r}")


class HostService(ServiceThread):
    """One hub session on its own thread: ``start()``, then ``stop()`` and ``join()``."""

    def __init__(self, plan: HostPlan,
                 on_event: Callable[[Tagged], None] | None = None) -> None:
        """Checks the folder and the PIN now (ConfigError), so a dialog or the command line
        can say what is wrong before anything starts."""
        super().__init__("hub", name=f"cs-hub-{next(SERIAL)}", on_event=on_event)
        self.plan = plan
        self.pin = choose_pin(plan.options.pin)
        self.out_path = check_output_folder(plan.out_dir, plan.resume)
        self.port: int | None = None
        self.addresses: list[str] = []  # where workers can reach the hub, best first
        self.result: HubResult | None = None
        self.error: ComputeShareError | None = None  # why the hub could not run
        self.session: HubSession | None = None  # once built (read-only for views)
        self.local: JoinService | None = None
        self._server: HubServer | None = None  # while serving (its kick/PIN are thread-safe)
        self._folder: FolderLock | None = None  # held from before the first write to the end
        self._lock = threading.Lock()
        self._stop_requested = threading.Event()
        self._serve_stop = threading.Event()  # what the serve loop watches

    # ----------------------------------------------------------------- any thread
    def stop(self) -> None:
        """Stop training (returns at once): the local worker leaves first, then the hub
        saves the model and a checkpoint and tells its workers."""
        with self._lock:
            self._stop_requested.set()
            local = self.local
        if local is not None and local.running:
            local.stop()  # its exit sets _serve_stop, so its last requests still get answers
        else:
            self._serve_stop.set()

    def kick(self, worker_id: int, block: bool = False) -> None:
        """Remove a worker from this session; with ``block``, from the hub's later
        sessions too, until allowed again (returns at once)."""
        if self._server is not None:
            self._server.kick(worker_id, block)

    def allow_again(self, key: str) -> None:
        """Let a removed or blocked machine pair with the PIN again (returns at once)."""
        if self._server is not None:
            self._server.allow_again(key)

    def removed_machines(self) -> list[RemovedMachine]:
        """The machines this session refuses now (removed, or blocked), newest first."""
        session = self.session
        return session.removed_machines() if session is not None and self.running else []

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
    def stopping(self) -> bool:
        """True once ``stop()`` was called."""
        return self._stop_requested.is_set()

    def session_name(self) -> str:
        """The name advertised on the LAN."""
        data = dataset_label(self.plan.config.dataset)
        return self.plan.options.name.strip() or f"{socket.gethostname()} — {data}"

    def hosted(self) -> dict[str, Any]:
        """How this session is hosted, kept in its session.json so that a resume hosts it
        the same way (HostOptions.resuming): the name, the port asked for, the local worker."""
        options = self.plan.options
        return {**{name: getattr(options, name) for name in HOSTED},
                "name": self.session_name()}

    # ----------------------------------------------------------------- hub thread
    def _run(self) -> None:
        session: HubSession | None = None
        server: HubServer | None = None
        advertising: HubAdvertising | None = None
        try:  # the folder is this session's before anything is written in it
            self._folder = FolderLock.take(self.out_path)
            identity = load_or_create(identity_path("hub"))
            self._prepare_data()
            paired = paired_machines(identity.public)  # machines that paired before
            session = self.session = HubSession(
                self.plan.config, pin=self.pin, hub_key=identity.public,
                out_dir=self.out_path, on_event=self._on_hub_event, resume=self.plan.resume,
                given=self.plan.given, paired=paired if paired.enabled else None,
                blocked=blocked_machines(identity.public),
                tensorboard=self.plan.options.tensorboard, host=self.hosted())
            server = self._server = self._listen(session, identity)
            advertising = self._advertise(session, identity, server.port)
            self._start_local_worker(session, identity, server.port)
            self.result = server.serve(self._serve_stop, linger_s=self.plan.linger_s)
            if self.result is None:  # stopped early: keep the model (a Stopped event)
                session.save_stopped()
        except ComputeShareError as exc:
            self.error = exc
            self._post(Failed(str(exc)))
        except Exception as exc:
            self.error = _failure(exc)
            self._post(Failed(str(self.error)))
        finally:
            self._shut_down(session, server, advertising)

    def _prepare_data(self) -> None:
        """A folder's (or a saved dataset's) images prepared, or found in the cache, before
        the session opens, so that the progress and what was skipped reach the views and
        ``stop()`` cancels it (PrepareCancelled); the session then loads them at once."""
        config = self.plan.config
        if self.plan.resume or self.plan.given is not None:
            return
        report = prepare(config.dataset, image_size=config.image_size,
                         test_fraction=config.test_fraction, test_spec=config.test_data,
                         label=config.label_column, input=config.input,
                         progress=ProgressLines(self._post), cancel=self._stop_requested.is_set)
        for line in report.lines() if report is not None else []:
            self._post(LogLine(line))

    def _listen(self, session: HubSession, identity: Identity) -> HubServer:
        port, bind = self.plan.port, self.plan.bind
        try:
            server = HubServer(session, identity, host=bind, port=port)
        except PortInUseError:
            if not self.plan.port_falls_back:
                raise
            self._post(LogLine(f"Port {DEFAULT_PORT} is busy: listening on a free port "
                               "instead."))
            server = HubServer(session, identity, host=bind, port=0)
        self.port = server.port
        if self._folder is not None:  # a second session in the folder is told where this is
            self._folder.record(server.port)
        self.addresses = self._addresses()
        self._post(Listening(bind, server.port, server.pub_port, server.pair_port,
                             key_fingerprint(identity.public), tuple(self.addresses),
                             str(session.out.path)))
        return server

    def _addresses(self) -> list[str]:
        if self.plan.bind not in ("0.0.0.0", ""):
            return [self.plan.bind]
        try:
            return advertised_addresses(list(self.plan.interfaces) if self.plan.interfaces
                                        else None)
        except DiscoveryError:
            return []

    def _advertise(self, session: HubSession, identity: Identity,
                   port: int) -> HubAdvertising | None:
        if not self.plan.options.advertise or self._serve_stop.is_set():
            return None
        name = self.session_name()
        interfaces = list(self.plan.interfaces) if self.plan.interfaces else None
        advertising = HubAdvertising(session, hub_key=identity.public, port=port, name=name,
                                     interfaces=interfaces)
        if not advertising.start():  # blocks ~1.7 s (mDNS probing), on this thread
            self._post(LogLine("Not announced on the LAN (mDNS unavailable): workers can "
                               "still connect by address."))
            return None
        self._post(Advertising(name))
        return advertising

    def _start_local_worker(self, session: HubSession, hub: Identity, port: int) -> None:
        if not self.plan.options.train_here:
            return
        target = JoinTarget(host="127.0.0.1", port=port, label="this machine")
        graph = session.model.graph  # code offered (--offer-code) is this person's own:
        own = graph.manifest.program_sha256 if session.model.offers_code and graph else ""
        plan = join_plan(target, JoinOptions(pin=self.pin, trust_code=own), role="host",
                         device=self.plan.device, follow_hub=False, hub_key=hub.public,
                         remember_code=False)  # its worker here runs its person's own file
        worker = load_or_create(identity_path("worker", plan.identity))
        session.allow(worker.public, "this machine")  # it is ours: nothing to pair
        local = JoinService(plan,
                            source="local", events=self.events, on_event=self._on_event,
                            on_exit=self._on_local_exit, scope=f"{self.scope}/local")
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
            session.close()  # its last checkpoint written: the folder may go
        if self._folder is not None:
            self._folder.release()
        self._post(Ended(result=self.result is not None))

    def _on_hub_event(self, event: Event) -> None:
        self._post(event)
        if isinstance(event, RefusedWaitOver) and self.plan.end_when_refused:
            self._end_refused(event)

    def _end_refused(self, e: RefusedWaitOver) -> None:
        """Nobody can train the model: stop (the model and a checkpoint are kept) and end
        with the error that says so (on the hub thread, from its own event)."""
        log.warning("every worker refused the model and nobody else came within %.0f s: "
                    "stopping", e.grace_s)
        self.error = AllRefusedError(
            f"every worker that came ({e.workers}) refused the model and nobody else came "
            f"within {e.grace_s:.0f} s; the last, {e.name}: {e.reason}")
        self.stop()

