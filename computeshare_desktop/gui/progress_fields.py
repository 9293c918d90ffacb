"""The fields of a progress window's state and the helpers its handlers share. No Qt.

``ProgressState`` (``progress_state``) adds what the window reads and the dispatch table;
the handlers (``progress_hub``, ``progress_worker``) change these fields. Both depend on this
module and it on neither, so the three import no circle.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Callable, Literal

from ..events import CodeRefused, Finished, RoundClosed, WorkerInfo
from .eta import WINDOW_ROUNDS, RoundPace
from .progress_rows import LIVE_STATES, FinalResult, WorkerRow

SMOOTHING = 0.1  # weight of the newest loss in the smoothed curve (an EMA, as TensorBoard)


def smooth_next(smooth: list[tuple[int, float]], value: float) -> float:
    """The smoothed curve's next value after ``smooth`` for a new ``value`` (an EMA)."""
    last = smooth[-1][1] if smooth else value
    return last + SMOOTHING * (value - last)
ETA_ROUNDS = WINDOW_ROUNDS  # the ETA uses the pace of the last this-many rounds
Points = tuple[tuple[int, float], ...]


# Where a window's session is: it starts, waits for workers (or the hub), trains, then ends
# finished, stopped or failed.
Phase = Literal["starting", "waiting", "training", "finished", "stopped", "failed"]
LIVE_PHASES: tuple[Phase, ...] = ("starting", "waiting", "training")


@dataclass(frozen=True, slots=True)
class LeftBehind:
    """What a worker's window showed when its host stopped the session: the next window
    of this worker for that hub goes on from it if the session does (progress_worker)."""

    stopped_at: int  # the hub's round at the stop: a resumed session goes on from it
    loss: Points
    loss_smooth: Points
    compute_ms: Points
    accuracy: Points
    pushed: int
    rejected: int


class ProgressFields:
    """What a progress window shows, for a hub (``role="hub"``) or a worker: the fields
    and the helpers the handler modules share."""

    def __init__(self, role: str, *, total_rounds: int = 0, name: str = "",
                 expected_workers: int = 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.role, self.total_rounds, self.name, self.clock = role, total_rounds, name, clock
        self.expected_workers = expected_workers
        self.phase: Phase = "starting"
        self.status = "Starting…"
        self.version = 0
        self.loss: list[tuple[int, float]] = []
        self.loss_smooth: list[tuple[int, float]] = []
        self.compute_ms: list[tuple[int, float]] = []  # this worker's time per gradient
        self.worker_id: int | None = None  # on a worker: its id at the hub
        self.pushed = self.rejected = 0  # on a worker: its own gradients
        self.pushed_before = self.rejected_before = 0  # a worker: its earlier window's
        self.stopped_at: int | None = None  # a worker: the round its host stopped at
        self.earlier: LeftBehind | None = None  # a worker: its earlier window's, to go on
        self._fed = False  # on a worker: the hub's rounds (all workers) have been heard
        self._hub_final: Finished | None = None
        self.accuracy: list[tuple[int, float]] = []
        self.workers: dict[int, WorkerRow] = {}
        self.bytes_sent = self.bytes_received = 0
        self.final: FinalResult | None = None
        self.error: str | None = None
        self.port: int | None = None
        self.addresses: list[str] = []  # where workers reach this hub
        self.out_dir = ""
        self.closed = False  # the runner's thread has ended
        self.batch_size = 0
        self.received = ""  # on a worker: what it trains and how it got it (ModelReceived)
        self.code_offer: CodeRefused | None = None  # a worker: the hub's code it refused
        self.started_at: float | None = None
        self.ended_at: float | None = None  # when it stopped making progress (elapsed stops)
        self.pace = RoundPace(window=ETA_ROUNDS)  # the ETA's, restarted when workers change
        self._round_bytes: deque[int] = deque(maxlen=ETA_ROUNDS)  # both directions, at the hub
        self.busy: float | None = None  # the workers' mean compute / round time, last round
        self._traffic: deque[tuple[float, int]] = deque(maxlen=256)
        self._log: list[str] = []
        self._refused: Counter[str] = Counter()
        self._silent = False
        self._all_done = False  # the hub said every round is done
        self.banner: tuple[str, str] | None = None  # (level, text) shown above everything
        self.refusal_banner = False  # the banner says a worker refused the model
        self.stopping = False  # Stop (or Leave) was asked: the session winds down
        self.paused = ""  # on a worker: why it is paused (worker.pause.pause_text); "": not

    @property
    def _rounds(self) -> deque[tuple[float, int]]:
        """The (time, round) marks the ETA counts: those since the training workers last
        changed, without the first rounds after the change (``RoundPace``)."""
        return self.pace.samples

    @property
    def active(self) -> bool:
        """True while the session can still make progress."""
        return self.phase in LIVE_PHASES

    # ------------------------------------------- helpers the handler modules share
    def _say(self, line: str) -> None:
        self._log.append(line)

    def _fail(self, message: str) -> None:
        self.error, self.phase, self.status = message, "failed", message
        self._alert(message, "error")
        self._say(f"Error: {message}")

    def _alert(self, text: str | None, level: str = "warning") -> None:
        """The banner at the top of the window (None hides it)."""
        self.banner = None if text is None else (level, text)
        self.refusal_banner = False  # a refusal's handler says so after

    def _progress(self, version: int, loss: float, now: float) -> None:
        if self.phase in ("starting", "waiting"):
            self.phase, self.started_at = "training", self.started_at or now
        self.version = version
        self.loss.append((version, loss))
        self.loss_smooth.append((version, smooth_next(self.loss_smooth, loss)))
        self.pace.add(now, version, (wid for wid, row in self.workers.items()
                                     if row.state == "training"))
        if not self.stopping:
            self.status = f"Training: round {version} of {self.total_rounds or '?'}"

    def _stopping(self) -> None:
        """Stop (a hub) or Leave (a worker) was asked: the session winds down at once, so a
        hub's rows no longer say their workers train (its Stopped or Ended follows)."""
        if not self.active or self.stopping:
            return
        self.stopping = True
        if self.role == "hub":
            self.status = "Stopping: the workers are told, the model is saved…"
            for row in self.workers.values():
                if row.state in LIVE_STATES:
                    row.state = "stopped"
        else:
            self.status = "Leaving the session…"

    def _forget_earlier_row(self, w: WorkerInfo) -> None:
        """A machine that rejoins (a new worker id, the same key) keeps one row."""
        if not w.key:
            return
        for wid, row in list(self.workers.items()):
            if wid != w.id and row.key == w.key:
                del self.workers[wid]

    def _round_work(self, e: RoundClosed) -> None:
        """Bytes per round and how busy the devices were (hub round events)."""
        self._round_bytes.append(e.bytes_in + e.bytes_out)
        self.busy = e.busy
