"""Every event the cores and the session service report: a closed set of frozen dataclasses.

No Qt, no sockets. The hub core and HubSession emit the hub's events; the transport also
publishes them to the workers on the event port, as JSON (``to_wire`` / ``from_wire``,
which checks every field's type: the wire is input like any other). WorkerSession emits a
worker's; the session service adds its own (listening, advertising, log lines, failures,
the end of a thread).

Views handle them explicitly: ``Handlers`` maps each event class to one method, so
``grep`` finds where an event is handled, and an event no table names is simply not
shown.
"""

from __future__ import annotations

import dataclasses
import logging
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable, TypeVar, Union

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A worker as the hub's events describe it."""

    id: int
    name: str
    device: str
    shard: int
    pushed: int = 0
    rejected: int = 0
    samples: int = 0
    ready: bool = False
    compute_s: float = 0.0
    batch: int = 0
    busy: float = 0.0
    key: str = ""  # its key's fingerprint: the same machine across rejoins


@dataclass(frozen=True, slots=True)
class Event:
    """The base of every event; ``kind`` names it on the wire and in logs."""

    kind: ClassVar[str] = ""

    def to_wire(self) -> dict[str, Any]:
        """A JSON-ready dict: the kind and every field."""
        data = {"kind": self.kind}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, WorkerInfo):
                value = dataclasses.asdict(value)
            elif isinstance(value, tuple):
                value = [dataclasses.asdict(v) if isinstance(v, WorkerInfo) else v
                         for v in value]
            data[f.name] = value
        return data


# ----------------------------------------------------------------- the hub's events
@dataclass(frozen=True, slots=True)
class WorkerJoined(Event):
    kind: ClassVar[str] = "worker_joined"
    worker: WorkerInfo


@dataclass(frozen=True, slots=True)
class WorkerReady(Event):
    """A worker has its shard and asked for the model: rounds wait for it from now on."""

    kind: ClassVar[str] = "worker_ready"
    worker: WorkerInfo


@dataclass(frozen=True, slots=True)
class WorkerLeft(Event):
    """``reason``: left, silent, kicked, arch_mismatch or stuck."""

    kind: ClassVar[str] = "worker_left"
    worker: WorkerInfo
    reason: str


@dataclass(frozen=True, slots=True)
class StateChanged(Event):
    """The session's state: waiting, training, done or stopped."""

    kind: ClassVar[str] = "state"
    state: str


@dataclass(frozen=True, slots=True)
class RoundClosed(Event):
    """A round ended with an optimizer step (async mode: one update)."""

    kind: ClassVar[str] = "round"
    round: int
    version: int
    steps: int
    loss: float
    contributors: int
    rejected: int
    bytes_in: int
    bytes_out: int
    payload_bytes: int
    samples: int
    seconds: float
    complete: bool
    compute_s: float
    busy: float
    workers: tuple[WorkerInfo, ...] = ()
    staleness: int | None = None  # async mode: versions between its model and this one
    lr_scale: float | None = None  # async mode: the factor its staleness put on the rate
    staleness_histogram: dict[str, Any] | None = None  # async: every eval_every versions


@dataclass(frozen=True, slots=True)
class ModeChanged(Event):
    """Preset "auto" measured the link and chose a mode."""

    kind: ClassVar[str] = "mode"
    preset: str
    codec: str
    topk: float
    local_steps: int
    compute_s: float
    other_s: float
    bandwidth: float


@dataclass(frozen=True, slots=True)
class Evaluated(Event):
    kind: ClassVar[str] = "eval"
    version: int
    accuracy: float
    loss: float
    final: bool


@dataclass(frozen=True, slots=True)
class Rejected(Event):
    """A request was refused (its code; the detail is for logs)."""

    kind: ClassVar[str] = "rejected"
    code: str
    detail: str


@dataclass(frozen=True, slots=True)
class PairingRefused(Event):
    kind: ClassVar[str] = "pairing_refused"
    code: str
    failures: int
    retry_after: float


@dataclass(frozen=True, slots=True)
class Finished(Event):
    """Every round is done; the model is saved."""

    kind: ClassVar[str] = "finished"
    accuracy: float
    loss: float
    version: int
    model_path: str
    seconds: float


@dataclass(frozen=True, slots=True)
class Stopped(Event):
    """The session stopped before its end; the model and a checkpoint were saved."""

    kind: ClassVar[str] = "stopped"
    version: int
    out_dir: str
    model_path: str | None


@dataclass(frozen=True, slots=True)
class DiskError(Event):
    """A write was skipped (a full disk, a locked file); training goes on."""

    kind: ClassVar[str] = "disk_error"
    what: str
    error: str


@dataclass(frozen=True, slots=True)
class PinChanged(Event):
    kind: ClassVar[str] = "pin_changed"


@dataclass(frozen=True, slots=True)
class HubStopped(Event):
    """The hub stopped the session early (the hub's last word to its workers; a worker
    reports it too when it learns it)."""

    kind: ClassVar[str] = "hub_stopped"
    version: int


# ----------------------------------------------------------------- a worker's events
@dataclass(frozen=True, slots=True)
class PairedWith(Event):
    kind: ClassVar[str] = "paired"
    session_id: str
    hub_key: str  # its fingerprint


@dataclass(frozen=True, slots=True)
class Joined(Event):
    kind: ClassVar[str] = "joined"
    worker_id: int
    shard: int
    num_shards: int
    dataset: str
    model: str
    rounds: int
    device: str
    batch_size: int = 0
    state: str = "waiting"  # the session's, when it joined (training: it takes over a shard)


@dataclass(frozen=True, slots=True)
class ShardReceived(Event):
    kind: ClassVar[str] = "shard"
    received: int
    total: int


@dataclass(frozen=True, slots=True)
class Pushed(Event):
    """The worker pushed its update for ``version`` (``accepted``: the hub took it)."""

    kind: ClassVar[str] = "pushed"
    version: int
    steps: int
    loss: float
    compute_s: float
    samples: int
    accepted: bool
    pushed: int
    rejected: int


@dataclass(frozen=True, slots=True)
class HubSilent(Event):
    kind: ClassVar[str] = "hub_silent"
    retry_in: float


@dataclass(frozen=True, slots=True)
class HubLost(Event):
    kind: ClassVar[str] = "hub_lost"
    silent_s: float
    give_up_s: float


@dataclass(frozen=True, slots=True)
class HubBack(Event):
    kind: ClassVar[str] = "hub_back"


@dataclass(frozen=True, slots=True)
class PairingWait(Event):
    kind: ClassVar[str] = "pairing_wait"
    code: str
    retry_after: float


@dataclass(frozen=True, slots=True)
class SessionFull(Event):
    kind: ClassVar[str] = "session_full"


@dataclass(frozen=True, slots=True)
class Rejoining(Event):
    kind: ClassVar[str] = "rejoin"


@dataclass(frozen=True, slots=True)
class Resync(Event):
    kind: ClassVar[str] = "resync"
    version: int


@dataclass(frozen=True, slots=True)
class WorkerDone(Event):
    """The worker's session is over (``left``: it chose to leave)."""

    kind: ClassVar[str] = "done"
    pushed: int
    rejected: int
    version: int
    left: bool = False


# ----------------------------------------------------------------- the service's events
@dataclass(frozen=True, slots=True)
class DeviceChosen(Event):
    kind: ClassVar[str] = "device"
    description: str
    note: str


@dataclass(frozen=True, slots=True)
class Listening(Event):
    """The hub's sockets are bound."""

    kind: ClassVar[str] = "listening"
    bind: str
    port: int
    pub_port: int
    pair_port: int
    hub_key: str
    addresses: tuple[str, ...]
    out_dir: str


@dataclass(frozen=True, slots=True)
class Advertising(Event):
    kind: ClassVar[str] = "advertising"
    name: str


@dataclass(frozen=True, slots=True)
class LogLine(Event):
    """A line for the session's log."""

    kind: ClassVar[str] = "log"
    text: str


@dataclass(frozen=True, slots=True)
class Failed(Event):
    """The session cannot go on; ``code`` is a RejectCode value or UNREACHABLE/ERROR."""

    kind: ClassVar[str] = "error"
    message: str
    code: str = "ERROR"


@dataclass(frozen=True, slots=True)
class Ended(Event):
    """The session's thread has ended (``left``: a worker that chose to leave;
    ``result``: it ran to the end)."""

    kind: ClassVar[str] = "ended"
    left: bool = False
    result: bool = False


HUB_EVENTS: tuple[type[Event], ...] = (
    WorkerJoined, WorkerReady, WorkerLeft, StateChanged, RoundClosed, ModeChanged, Evaluated,
    Rejected, PairingRefused, Finished, Stopped, DiskError, PinChanged, HubStopped)
WORKER_EVENTS: tuple[type[Event], ...] = (
    PairedWith, Joined, ShardReceived, Pushed, HubSilent, HubLost, HubBack, HubStopped,
    PairingWait, SessionFull, Rejoining, Resync, WorkerDone)
SERVICE_EVENTS: tuple[type[Event], ...] = (
    DeviceChosen, Listening, Advertising, LogLine, Failed, Ended)
BY_KIND: dict[str, type[Event]] = {cls.kind: cls for cls in HUB_EVENTS}  # what the wire carries


# ----------------------------------------------------------------- from the wire
def from_wire(data: Any) -> Event | None:
    """The hub event a JSON object describes; None for a kind this version does not know
    (a newer hub); ValueError when a known kind has missing or mistyped fields."""
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise ValueError("an event must be an object with a kind")
    cls = BY_KIND.get(data["kind"])
    if cls is None:
        return None
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is dataclasses.MISSING:
                raise ValueError(f"{cls.kind} event without {f.name}")
            continue
        values[f.name] = _check(data[f.name], hints[f.name], f"{cls.kind}.{f.name}")
    return cls(**values)


def _check(value: Any, hint: Any, where: str) -> Any:
    """``value`` as type ``hint`` (ints may stand for floats), or ValueError."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in typing.get_args(hint):
            try:
                return _check(value, option, where)
            except ValueError:
                continue
        raise ValueError(f"{where}: {value!r} is not {hint}")
    if hint is type(None):
        if value is None:
            return None
    elif hint is WorkerInfo:
        if isinstance(value, dict):
            return WorkerInfo(**{f.name: _check(value[f.name], typing.get_type_hints(
                WorkerInfo)[f.name], f"{where}.{f.name}") for f in dataclasses.fields(
                WorkerInfo) if f.name in value})
    elif origin is tuple:
        if isinstance(value, list):
            item = typing.get_args(hint)[0]
            return tuple(_check(v, item, where) for v in value)
    elif origin is dict:
        if isinstance(value, dict):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is bool:
        if isinstance(value, bool):
            return value
    elif hint in (int, str):
        if isinstance(value, hint) and not isinstance(value, bool):
            return value
    raise ValueError(f"{where}: {value!r} is not {getattr(hint, '__name__', hint)}")


# ----------------------------------------------------------------- handling
E = TypeVar("E", bound=Event)


@dataclass
class Handlers:
    """One handler per event class: ``handlers.on(RoundClosed, fn)``, then
    ``handlers.dispatch(event)``. Events nobody handles are ignored."""

    table: dict[type[Event], Callable[[Any], None]] = field(default_factory=dict)

    def on(self, cls: type[E], handler: Callable[[E], None]) -> "Handlers":
        self.table[cls] = handler
        return self

    def dispatch(self, event: Event) -> bool:
        """Run the event's handler; False when there is none."""
        handler = self.table.get(type(event))
        if handler is None:
            return False
        handler(event)
        return True


def kinds(events: Iterable[Event], cls: type[E]) -> list[E]:
    """The events of one class, in order (a convenience for tests and reports)."""
    return [e for e in events if isinstance(e, cls)]
