"""The rows and the end result a progress window shows: plain data, no Qt."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..events import WorkerInfo

RATE_WINDOW_S = 3.0  # samples/s and bandwidth are measured over this much recent history
# a row's states while its worker is in the session (those still there at the end count)
ACTIVE_STATES = ("joining", "loading data", "ready", "training", "done")
LIVE_STATES = ("joining", "loading data", "ready", "training")  # a row still in a session


@dataclass(slots=True)
class WorkerRow:
    """One line of the workers table."""

    worker_id: int
    name: str
    device: str
    pushed: int = 0
    rejected: int = 0
    samples: int = 0
    last_seen: float | None = None
    state: str = "joining"
    share: int = 0  # its per-step batch: the hub sizes it to the device's speed
    busy: float | None = None  # compute time / round time in its last round
    marks: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=64))
    key: str = ""  # the machine's key fingerprint: a rejoin keeps its row

    def progress(self, now: float, pushed: int, rejected: int, samples: int) -> None:
        """New counters from the hub (or from this worker's own pushes)."""
        if pushed != self.pushed or samples != self.samples or self.last_seen is None:
            self.last_seen = now
        self.pushed, self.rejected, self.samples = pushed, rejected, samples
        if self.marks and self.marks[-1][0] == now:  # several rounds in one batch
            self.marks.pop()
        self.marks.append((now, samples))
        while len(self.marks) > 2 and now - self.marks[0][0] > RATE_WINDOW_S:
            self.marks.popleft()

    def work(self, info: WorkerInfo) -> None:
        """Its share of the work and how busy its device was, from a hub round event."""
        if info.batch > 0:
            self.share = info.batch
        if info.busy > 0:
            self.busy = info.busy

    def rate(self, now: float) -> float:
        """Samples per second over the recent window (0 once it stops pushing)."""
        if len(self.marks) < 2 or (self.last_seen is not None and now - self.last_seen > 5):
            return 0.0
        (t0, s0), (t1, s1) = self.marks[0], self.marks[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 else 0.0


@dataclass(frozen=True, slots=True)
class FinalResult:
    """How the session ended, for the finish panel."""

    version: int
    accuracy: float | None = None  # the hub's final test accuracy (None if not heard)
    model_path: str = ""
    seconds: float = 0.0
    pushed: int = 0
    rejected: int = 0


AGGREGATION_WORDS = {"trimmed-mean": "robust aggregation (trimmed mean)",
                     "median": "robust aggregation (median)"}


def mode_words(updates: str, aggregation: str) -> str:
    """What a subtitle adds about how updates are applied: asynchronous mode and robust
    aggregation are named; synchronous rounds of a plain mean, the default, add nothing."""
    words = ["asynchronous updates"] if updates == "async" else []
    if aggregation in AGGREGATION_WORDS:
        words.append(AGGREGATION_WORDS[aggregation])
    return " · ".join(words)
