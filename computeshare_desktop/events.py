"""Every event the cores and the session service report: a closed set of frozen Structs.

No Qt, no sockets. The hub core and HubSession emit the hub's events; the transport also
publishes them to the workers on the event port, as JSON (``to_wire`` / ``from_wire``,
where msgspec checks every field's type: the wire is input like any other). WorkerSession
emits a worker's; the session service adds its own (listening, advertising, log lines,
failures, the end of a thread).

Views handle them explicitly: ``Handlers`` maps each event class to one method, so
``grep`` finds where an event is handled, and an event no table names is simply not
shown.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, ClassVar, Iterable, TypeVar

import msgspec

log = logging.getLogger(__name__)


class WorkerInfo(msgspec.Struct, frozen=True):
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


class Word(str, Enum):
    """A state named in code and said as its value everywhere else: on the wire (msgspec
    encodes the value), in logs and f-strings, and as a dict key (it hashes as its value),
    as ``enum.StrEnum`` does from Python 3.11."""

    def __str__(self) -> str:
        return str.__str__(self)

    __hash__ = str.__hash__


class LeaveReason(Word):
    """Why a worker left a session (``WorkerLeft.reason``); a window's row takes it as its
    state (gui/words.RowState names each one's words)."""

    LEFT = "left"  # said goodbye
    PAUSED = "paused"  # its person (or its battery) paused it; it may come back
    SILENT = "silent"  # stopped answering: the hub freed its shard
    KICKED = "kicked"  # the host removed it
    ARCH_MISMATCH = "arch_mismatch"  # it builds another architecture than the hub's
    STUCK = "stuck"  # missed several rounds: its shard went to others
    MODEL_REFUSED = "model_refused"  # it refused the model (or was refused it)


class Event(msgspec.Struct, frozen=True):
    """The base of every event; ``kind`` names it on the wire and in logs. Unknown fields
    are ignored when read (a newer hub may add some)."""

    kind: ClassVar[str] = ""

    def to_wire(self) -> dict[str, Any]:
        """A JSON-ready dict: the kind and every field."""
        return {"kind": self.kind, **msgspec.to_builtins(self)}


# ----------------------------------------------------------------- the hub's events
class WorkerJoined(Event, frozen=True):
    """``returning``: why this machine (its key) left before, back now under its earlier id
    and counts ("paused": it resumed; "silent", "left"); "": it is new here."""

    kind: ClassVar[str] = "worker_joined"
    worker: WorkerInfo
    returning: str = ""


class WorkerReady(Event, frozen=True):
    """A worker has its shard and asked for the model: rounds wait for it from now on."""

    kind: ClassVar[str] = "worker_ready"
    worker: WorkerInfo


class WorkerLeft(Event, frozen=True):
    """``reason``: why it left (a worker hearing a reason it does not know, from a newer
    hub, drops the event)."""

    kind: ClassVar[str] = "worker_left"
    worker: WorkerInfo
    reason: LeaveReason


class ModelRefused(Event, frozen=True):
    """A worker refused the session's model (its graph failed the worker's checks) or was
    refused it (another torch release than the hub's); ``reason`` says which, in words: the
    layer it concerns where the hub knows it, why, and the way out."""

    kind: ClassVar[str] = "model_refused"
    name: str  # the worker's name
    reason: str


class AllRefused(Event, frozen=True):
    """No worker is left and each of the ``workers`` machines that came refused the model
    (or was refused it); the last was ``name``, saying ``reason``. The hub waits on: if
    nobody else comes within ``grace_s``, RefusedWaitOver follows (``host`` then ends)."""

    kind: ClassVar[str] = "all_refused"
    workers: int
    name: str
    reason: str
    grace_s: float

    def who(self) -> str:
        """The machines that came, for people: "the one worker that came", "all 3 …"."""
        return ("the one worker that came" if self.workers == 1
                else f"all {self.workers} workers that came")


class RefusedWaitOver(Event, frozen=True):
    """Every worker refused the model and nobody else came (to pair or join) within
    ``grace_s`` since: the command line ends the session (ExitCode.MODEL_REFUSED)."""

    kind: ClassVar[str] = "refused_wait_over"
    workers: int
    name: str  # the last to refuse, and why
    reason: str
    grace_s: float


class StateChanged(Event, frozen=True):
    """The session's state: waiting, training, done or stopped."""

    kind: ClassVar[str] = "state"
    state: str


class RoundClosed(Event, frozen=True):
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
    # Bytes since the previous round closed by purpose (hub/traffic.py): the samples of
    # shards, the model (and a graph), the pushes.
    data_bytes: int = 0
    model_bytes: int = 0
    update_bytes: int = 0
    # The learning rate of the round: the workers' with local steps, else the hub's step's
    # (async: with its staleness factor). None: a hub from before it was sent.
    lr: float | None = None


class ModeChanged(Event, frozen=True):
    """Preset "auto" measured the link and chose a mode."""

    kind: ClassVar[str] = "mode"
    preset: str
    codec: str
    topk: float
    local_steps: int
    compute_s: float
    other_s: float
    bandwidth: float


class Evaluated(Event, frozen=True):
    kind: ClassVar[str] = "eval"
    version: int
    accuracy: float
    loss: float
    final: bool


class Rejected(Event, frozen=True):
    """A request was refused (its code; the detail is for logs)."""

    kind: ClassVar[str] = "rejected"
    code: str
    detail: str


class PairingRefused(Event, frozen=True):
    kind: ClassVar[str] = "pairing_refused"
    code: str
    failures: int
    retry_after: float


class Finished(Event, frozen=True):
    """Every round is done; the model is saved."""

    kind: ClassVar[str] = "finished"
    accuracy: float
    loss: float
    version: int
    model_path: str
    seconds: float


class Stopped(Event, frozen=True):
    """The session stopped before its end; the model and a checkpoint were saved."""

    kind: ClassVar[str] = "stopped"
    version: int
    out_dir: str
    model_path: str | None


class DiskError(Event, frozen=True):
    """A write was skipped (a full disk, a locked file); training goes on."""

    kind: ClassVar[str] = "disk_error"
    what: str
    error: str


class PinChanged(Event, frozen=True):
    kind: ClassVar[str] = "pin_changed"


class HubStopped(Event, frozen=True):
    """The hub stopped the session early (the hub's last word to its workers; a worker
    reports it too when it learns it)."""

    kind: ClassVar[str] = "hub_stopped"
    version: int


# ----------------------------------------------------------------- a worker's events
class PairedWith(Event, frozen=True):
    kind: ClassVar[str] = "paired"
    session_id: str
    hub_key: str  # its fingerprint


class Joined(Event, frozen=True):
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
    updates: str = "sync"  # how the hub applies updates ("async": as they arrive)
    aggregation: str = "mean"  # its rule ("trimmed-mean", "median": robust)


class ModelReceived(Event, frozen=True):
    """What the worker will train: ``how`` is "built-in" (built here by name), "graph
    checked" (the hub's graph, which passed this machine's checks) or "code approved
    (HASH)" (the hub's Python file, whose sha256 its person approved for that hub)."""

    kind: ClassVar[str] = "model_received"
    name: str
    parameters: int  # the values this worker trains (frozen ones never travel)
    ops: int  # the graph's operations; 0 for a built-in
    how: str

    def describe(self) -> str:
        """One line for people: the model, what trains here, how it was got."""
        ops = f", {self.ops:,} ops" if self.ops else ""
        return f"Model {self.name}: {self.parameters:,} parameters to train{ops}, {self.how}"


class ShardReceived(Event, frozen=True):
    kind: ClassVar[str] = "shard"
    received: int
    total: int


class Pushed(Event, frozen=True):
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


class HubSilent(Event, frozen=True):
    kind: ClassVar[str] = "hub_silent"
    retry_in: float


class HubLost(Event, frozen=True):
    kind: ClassVar[str] = "hub_lost"
    silent_s: float
    give_up_s: float


class HubBack(Event, frozen=True):
    kind: ClassVar[str] = "hub_back"


class PairingWait(Event, frozen=True):
    kind: ClassVar[str] = "pairing_wait"
    code: str
    retry_after: float


class SessionFull(Event, frozen=True):
    kind: ClassVar[str] = "session_full"


class Rejoining(Event, frozen=True):
    kind: ClassVar[str] = "rejoin"


class Resync(Event, frozen=True):
    kind: ClassVar[str] = "resync"
    version: int


class Paused(Event, frozen=True):
    """The worker paused: it told the hub, which gave its shard to others (``reason``:
    "you", its person; "battery", the machine runs on battery power)."""

    kind: ClassVar[str] = "paused"
    reason: str


class Resumed(Event, frozen=True):
    """The worker resumes: it joins again, without the PIN."""

    kind: ClassVar[str] = "resumed"


class WorkerDone(Event, frozen=True):
    """The worker's session is over (``left``: it chose to leave)."""

    kind: ClassVar[str] = "done"
    pushed: int
    rejected: int
    version: int
    left: bool = False


# ----------------------------------------------------------------- the service's events
class DeviceChosen(Event, frozen=True):
    kind: ClassVar[str] = "device"
    description: str
    note: str


class Listening(Event, frozen=True):
    """The hub's sockets are bound."""

    kind: ClassVar[str] = "listening"
    bind: str
    port: int
    pub_port: int
    pair_port: int
    hub_key: str
    addresses: tuple[str, ...]
    out_dir: str


class Advertising(Event, frozen=True):
    kind: ClassVar[str] = "advertising"
    name: str


class LogLine(Event, frozen=True):
    """A line for the session's log."""

    kind: ClassVar[str] = "log"
    text: str


class Failed(Event, frozen=True):
    """The session cannot go on; ``code`` is a RejectCode value or UNREACHABLE/ERROR."""

    kind: ClassVar[str] = "error"
    message: str
    code: str = "ERROR"


class CodeRefused(Event, frozen=True):
    """This worker refused the hub's model: it is Python code (the hub's ``--offer-code``)
    whose ``sha256`` its person has not approved for the hub with key ``hub_key``. Nothing
    of it ran; the app offers to approve that exact hash for that hub and join again."""

    kind: ClassVar[str] = "code_refused"
    model: str  # "net.py:Net"
    sha256: str
    hub_key: str
    hub: str = ""  # the hub as joined (its address), for people


class Ended(Event, frozen=True):
    """The session's thread has ended (``left``: a worker that chose to leave;
    ``result``: it ran to the end)."""

    kind: ClassVar[str] = "ended"
    left: bool = False
    result: bool = False


HUB_EVENTS: tuple[type[Event], ...] = (
    WorkerJoined, WorkerReady, WorkerLeft, ModelRefused, AllRefused, RefusedWaitOver,
    StateChanged, RoundClosed, ModeChanged, Evaluated, Rejected, PairingRefused, Finished,
    Stopped, DiskError, PinChanged, HubStopped)
WORKER_EVENTS: tuple[type[Event], ...] = (
    PairedWith, Joined, ModelReceived, ShardReceived, Pushed, HubSilent, HubLost, HubBack,
    HubStopped, PairingWait, SessionFull, Rejoining, Resync, Paused, Resumed, WorkerDone)
SERVICE_EVENTS: tuple[type[Event], ...] = (
    DeviceChosen, Listening, Advertising, LogLine, Failed, CodeRefused, Ended)
BY_KIND: dict[str, type[Event]] = {cls.kind: cls for cls in HUB_EVENTS}  # what the wire carries


# ----------------------------------------------------------------- from the wire
def from_wire(data: Any) -> Event | None:
    """The hub event a JSON object describes; None for a kind this version does not know
    (a newer hub); ValueError when a known kind has missing or mistyped fields (an int may
    stand for a float)."""
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise ValueError("an event must be an object with a kind")
    cls = BY_KIND.get(data["kind"])
    if cls is None:
        return None
    try:
        return msgspec.convert(data, cls, strict=True)
    except ValueError as exc:  # ValidationError, or a lone surrogate where no str is due
        raise ValueError(f"{cls.kind} event: {exc}") from None


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
