"""Joining a session as a worker, for the command line and the app alike. No Qt.

``JoinService`` owns the worker's thread and the policies around it: which of the hub's
addresses to try first, the hub keys this machine remembers (a worker that joined a hub
before rejoins without the PIN), the device. The thread owns every ZeroMQ socket of the
worker (the session makes and closes them).

Once joined, a worker that follows its hub (``follow_hub``) also listens to the hub's
event stream (an ``EventSubscriber``: its own thread and CURVE SUB socket, keyed by the
pairing) and forwards those events with ``source="feed"``: accuracy, every worker's
counters, the final result. The worker thread starts it on Joined and closes it when the
session ends, however it ends.

Views subscribe to its events (``Tagged``) through a callback run on the service's
threads, or drain them from ``events``.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from pathlib import Path

from ..errors import (ComputeShareError, HubStoppedError, HubUnreachableError, RejectedError,
                      RemovedError)
from ..events import (CodeRefused, DeviceChosen, Ended, Event, Failed, Finished, HubStopped,
                      Joined, PairedWith)
from ..join_options import JoinOptions
from ..protocol import RejectCode
from ..protocol.pake import key_fingerprint
from ..protocol.ports import HubPorts
from ..schema import check
from ..transport import (EventSubscriber, KnownHubs, ZmqConnector, first_reachable,
                         identity_path, load_or_create, probe_hub)
from ..transport.keys import data_dir
from ..worker import (CodeApprovals, CodeNotApproved, DeviceChoice, WorkerOptions,
                      WorkerResult, WorkerSession, pick_device)
from ..worker.approvals import FILE_NAME as APPROVALS_FILE
from ..worker.battery import BatteryThread, BatteryWatch, Reader, read_power
from ..worker.pause import PauseReason, PauseSwitch
from .messages import refusal_message
from .options import JoinTarget, worker_name
from .threads import ServiceThread, Source, Tagged

log = logging.getLogger(__name__)

FEED: Source = "feed"  # the ``source`` of events relayed from the hub's event stream
FINISHED_GRACE_S = 3.0  # after the hub's Done, how long to wait for its Finished event


@dataclass(frozen=True, slots=True)
class JoinPlan:
    """Which hub to join, and how this worker behaves: the options whole, as a front end
    holds them (the Join dialog's fields, ``join``'s flags), and what only the front end
    knows. ``join_plan`` builds it, for every front end."""

    target: JoinTarget
    options: JoinOptions = field(default_factory=JoinOptions)  # pin, threads, speed...
    name: str = "worker"  # the machine: one key (and one list of known hubs) per name
    role: str = ""  # "host": the host's own worker, "vm · CPU (host)", with its own key
    device: DeviceChoice | None = None  # None: the best one
    follow_hub: bool = True  # relay the hub's events too (a host's own worker has them)
    hub_key: str | None = None  # the hub's key, when the hub already allows this worker's
    # (the host's own worker): it joins at once, without pairing
    remember_code: bool = True  # approvals are read from and written to the user's file
    # (False: the host's own worker, which runs its person's own file, keeps none)

    @property
    def identity(self) -> str:
        """Whose key this worker uses (and whose list of known hubs)."""
        return f"{self.name} ({self.role})" if self.role else self.name


def join_plan(target: JoinTarget, options: JoinOptions | None = None, *,
              name: str | None = None, role: str = "", device: DeviceChoice | None = None,
              follow_hub: bool = True, hub_key: str | None = None,
              remember_code: bool = True) -> JoinPlan:
    """The plan of ``options`` for ``target`` (ConfigError on a bad value), for the app,
    the command line and the host's own worker alike; ``name``: the machine, whose key it
    uses (None: this machine's name)."""
    chosen = options if options is not None else JoinOptions()
    check(chosen)
    chosen = dataclasses.replace(chosen, trust_code=chosen.trust_code.lower(),
                                 wait_s=max(0.0, chosen.wait_s))  # negative: say why now
    return JoinPlan(target, chosen, name=name or worker_name(), role=role, device=device,
                    follow_hub=follow_hub, hub_key=hub_key, remember_code=remember_code)


def worker_label(machine: str, device: DeviceChoice, role: str = "") -> str:
    """How a worker is shown on the hub by default: its machine and its device, so that a
    laptop's CPU and a PC's GPU can be told apart (two app instances on one machine get
    "#2" from the hub)."""
    return f"{machine} · {device.short}" + (f" ({role})" if role else "")


def known_hub_key(target: JoinTarget, known: KnownHubs) -> str | None:
    """The key of ``target``'s hub if this worker joined it before (then no PIN is needed):
    by the advertised key's fingerprint, else by the address."""
    if target.expected_key:
        return known.key_with_fingerprint(target.expected_key, key_fingerprint)
    return next((key for host in (target.host, *target.hosts)
                 if (key := known.key_for(f"{host}:{target.port}"))), None)


def code_approvals() -> CodeApprovals:
    """The approvals of hubs' code this user has given (``approved-code.json`` in the
    per-user data folder, beside the keys)."""
    return CodeApprovals(data_dir() / APPROVALS_FILE)


def approve_code(refused: CodeRefused) -> None:
    """The person approves the code a hub offered (the app's dialog): that exact sha256,
    for that hub key, remembered. OSError when it cannot be written."""
    code_approvals().approve(refused.hub_key, refused.sha256, refused.model)


def remembers(target: JoinTarget, name: str) -> bool:
    """True when the worker called ``name`` has paired with (or joined) ``target``'s hub
    before."""
    return known_hub_key(target, KnownHubs(identity_path("worker", name))) is not None


REMOVALS = ("blocked", "removed")  # how a host last refused this machine, the stronger first


def removals(key_file: Path, how: str = "removed") -> KnownHubs:
    """The hubs whose host removed (``how`` "removed") or blocked ("blocked") the worker of
    ``key_file`` (kept like its known hubs, in a file beside them): it needs the PIN there
    again, and its next join says why."""
    hubs = KnownHubs(key_file)
    hubs.path = hubs.path.with_name(f"{key_file.stem}-{how}.json")
    return hubs


def removed_by(target: JoinTarget, name: str) -> str | None:
    """"blocked" or "removed" when ``target``'s host last refused the worker called
    ``name`` so (and it has not paired with that hub since), else None."""
    key_file = identity_path("worker", name)
    return next((how for how in REMOVALS
                 if known_hub_key(target, removals(key_file, how)) is not None), None)


class JoinService(ServiceThread):
    """One worker session on its own thread: ``start()``, then ``stop()`` and ``join()``."""

    def __init__(self, plan: JoinPlan, *, source: Source = "worker",
                 events: "queue.SimpleQueue[Tagged] | None" = None,
                 on_event: Callable[[Tagged], None] | None = None,
                 on_exit: Callable[[], None] | None = None, scope: str | None = None,
                 battery: Reader = read_power) -> None:
        """``scope``: the name of its thread (a host's worker: inside the host's scope);
        ``battery``: reads the power source (tests pass a fake)."""
        super().__init__(source, name=scope, events=events, on_event=on_event)
        self.plan = plan
        self.target = plan.target
        self.result: WorkerResult | None = None
        self.error: ComputeShareError | None = None  # why the worker stopped early
        self.error_code: str | None = None
        self.stopped_at: int | None = None  # the round its host stopped the session at
        self._on_exit = on_exit
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._session: WorkerSession | None = None
        self._feed: EventSubscriber | None = None  # made and closed on the worker thread
        self._feed_key: str | None = None
        self._connector: ZmqConnector | None = None
        self._hub_finished = threading.Event()
        self.pauses = PauseSwitch()  # the window's Pause button, the CLI's signal, the battery
        self._battery = battery
        self._battery_thread: BatteryThread | None = None

    # ----------------------------------------------------------------- any thread
    def stop(self) -> None:
        """Leave the session (returns at once)."""
        with self._lock:
            self._stop.set()
            if self._session is not None:
                self._session.leave()

    def choose(self, **given: Any) -> "JoinService":
        """How this machine shares itself (the Join dialog's fields: JoinOptions' values
        by name; None leaves one as it is), before ``start()`` (ConfigError on a bad one)."""
        chosen = dataclasses.replace(self.plan.options,
                                     **{k: v for k, v in given.items() if v is not None})
        check(chosen)
        self.plan = dataclasses.replace(self.plan, options=chosen)
        return self

    def pause(self) -> None:
        """Its person pauses it: at the end of the round under way, the hub gives its shard
        to the others (returns at once)."""
        self.pauses.pause(PauseReason.YOU)

    def resume(self) -> None:
        """Its person resumes it (from any pause): it joins again, without the PIN."""
        self.pauses.resume()

    def toggle_pause(self) -> None:
        """Pause, or resume when paused (the CLI's signal)."""
        self.pauses.toggle()

    def join(self, timeout_s: float) -> bool:
        """Wait for the thread; True when it has ended (nothing to force here)."""
        return self.wait(timeout_s)

    @property
    def stopping(self) -> bool:
        """True once ``stop()`` was called."""
        return self._stop.is_set()

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
            self._failed(exc, code, refusal_message(code, exc.detail))
        except HubStoppedError as exc:
            self.error, self.error_code = exc, RejectCode.HUB_STOPPED  # its HubStopped says it
        except CodeNotApproved as exc:
            self._post(CodeRefused(exc.model, exc.sha256, exc.hub_key, self.target.label
                                   or f"{self.target.host}:{self.target.port}"))
            self._failed(exc, "CODE_NOT_APPROVED", str(exc))
        except HubUnreachableError as exc:
            if not self._stop.is_set():
                self._failed(exc, "UNREACHABLE", str(exc))
        except ComputeShareError as exc:
            self._failed(exc, "ERROR", str(exc))
        except Exception as exc:  # a bug: keep the app alive and show it
            log.exception("worker thread failed")
            self._failed(ComputeShareError(f"unexpected error: {exc!r}"), "ERROR",
                         f"unexpected error: {exc!r}")
        finally:
            if self._battery_thread is not None:
                self._battery_thread.close()
            self._close_feed()
            self._post(Ended(left=self._stop.is_set(), result=self.result is not None))
            if self._on_exit is not None:
                self._on_exit()

    def _failed(self, exc: ComputeShareError, code: str, message: str) -> None:
        self.error, self.error_code = exc, code
        self._post(Failed(message, code))

    def _work(self) -> None:
        plan, t, chosen = self.plan, self.target, self.plan.options
        device = plan.device or pick_device("auto")
        self._post(DeviceChosen(device.description, device.note))
        if chosen.threads > 0:
            torch_threads(chosen.threads)
        if chosen.pause_on_battery:
            self._battery_thread = BatteryThread(
                BatteryWatch(self.pauses, self._battery),
                name=f"{threading.current_thread().name}/battery").start()
        key_file = identity_path("worker", plan.identity)
        identity = load_or_create(key_file)
        host = first_reachable(t.hosts, t.pair_port or HubPorts.at(t.port).pairing) \
            if len(t.hosts) > 1 else t.host
        known = KnownHubs(key_file)
        hub_key = plan.hub_key or known_hub_key(t, known)
        # The cause of a failure now, in words, rather than retries that say nothing:
        port = t.port if hub_key else t.pair_port or HubPorts.at(t.port).pairing
        self._probe(host, port, label=f"{host}:{t.port}" + ("" if port == t.port else
                                                           f" (its pairing port {port})"))
        connector = ZmqConnector(host, t.port, identity, pair_port=t.pair_port)
        self._connector = connector
        label = chosen.name or worker_label(plan.name, device, plan.role)
        options = WorkerOptions(pin=chosen.pin, name=label,
                                first_contact_s=chosen.first_contact_s,
                                give_up_s=chosen.give_up_s, max_rate=chosen.max_rate,
                                cache_size=chosen.cache_size)
        approvals = code_approvals() if plan.remember_code else CodeApprovals(None)
        session = WorkerSession(connector, options, device, on_event=self._on_worker_event,
                                expected_key=t.expected_key, hub_key=hub_key,
                                approvals=approvals, trust_code=chosen.trust_code,
                                pauses=self.pauses)

        refused = [removals(key_file, how) for how in REMOVALS]

        def remember(event: Event) -> None:  # a restart rejoins without the PIN
            # PairedWith too: the hub lists a machine among its paired ones once it proved
            # the PIN, even if it then waited as a spare and never joined (both sides agree)
            if isinstance(event, (PairedWith, Joined)) and session.hub_key:
                known.remember(session.hub_key, f"{host}:{t.port}")
                for hubs in refused:
                    hubs.forget(session.hub_key)

        session.sinks.append(remember)
        with self._lock:
            self._session = session
            if self._stop.is_set():
                session.leave()
        try:
            self.result = session.run()
        except RemovedError as exc:  # the hub forgot this machine's key: so does this machine
            gone = session.hub_key or hub_key
            if gone:
                known.forget(gone)
                for how, hubs in zip(REMOVALS, refused, strict=True):
                    if (how == "blocked") == exc.blocked:
                        hubs.remember(gone, f"{host}:{t.port}")
                    else:
                        hubs.forget(gone)
            raise

    def _probe(self, host: str, port: int, label: str) -> None:
        """Check the hub's address (see probe_hub), for up to ``wait_s`` if asked."""
        deadline = time.monotonic() + self.plan.options.wait_s
        while True:
            try:
                probe_hub(host, port, label=label)
                return
            except HubUnreachableError:
                if time.monotonic() >= deadline or self._stop.wait(0.5):
                    raise

    def _on_worker_event(self, event: Event) -> None:
        if isinstance(event, HubStopped):
            self.stopped_at = event.version
        if isinstance(event, Joined) and self._session is not None:
            self._follow(self._session)
        self._post(event)

    # ----------------------------------------------------------------- the hub's events
    def _follow(self, session: WorkerSession) -> None:
        """Subscribe to the hub's events (worker thread, on each Joined)."""
        if not self.plan.follow_hub or session.hub_key is None:
            return
        if self._feed is not None and self._feed_key == session.hub_key:
            return  # a rejoin with the same hub: the subscription still stands
        self._close_feed()
        c = self._connector
        if c is None:
            return
        try:
            self._feed = EventSubscriber(c.host, HubPorts.at(c.port).events, c.identity,
                                         session.hub_key, self._on_hub_event).start()
            self._feed_key = session.hub_key
        except Exception:  # best-effort: the worker trains on without the hub's view
            log.exception("could not follow the hub's events")
            self._feed = None

    def _on_hub_event(self, event: Event) -> None:
        """On the subscriber's thread: relay one hub event."""
        self._post(event, FEED)
        if isinstance(event, Finished):
            self._hub_finished.set()
            if self.pauses.reason is not None and self._session is not None:
                self._session.stop.set()  # paused through the end: no session to rejoin
        elif isinstance(event, HubStopped) and self._session is not None:
            self._session.hub_said_stopped(event.version)  # it may be computing: end now

    def _close_feed(self) -> None:
        feed, self._feed, self._feed_key = self._feed, None, None
        if feed is None:
            return
        if self.result is not None and not self._stop.is_set():
            self._hub_finished.wait(FINISHED_GRACE_S)  # the hub's final accuracy is on its way
        feed.close()



def torch_threads(count: int) -> None:
    """torch's CPU threads, for the whole process (the Join dialog's "Threads")."""
    import torch

    torch.set_num_threads(count)
