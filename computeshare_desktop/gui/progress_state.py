"""The view model of a progress window: core events in, what to show out. No Qt.

The hub and the worker speak different event vocabularies (see HubSession and
WorkerSession); ``ProgressState.apply`` folds a batch of either into one state, and the
widgets only render it. Times come from ``clock`` when a batch is applied: the GUI drains
every ~100 ms, which is precise enough for rates, ETAs and "last seen".

A worker's window folds two streams: its own session's events (``source="worker"``: loss,
compute time, its pushes) and the hub's, relayed from the hub's event port
(``source="feed"``): test accuracy, every worker's counters and the final result.

The fields live in ``progress_fields``; this module adds what the window reads from them
and the dispatch table (``HANDLERS``). The handlers themselves are plain functions in
``progress_hub`` (a hub's window) and ``progress_worker`` (a worker's window, the feed
included), which change a ``ProgressFields`` and so never import this module.
"""

from __future__ import annotations

from typing import Any, Callable

from ..events import (AllRefused, Advertising, CodeRefused, DeviceChosen, DiskError, Ended,
                      Evaluated, Event, Failed, Finished, HubBack, HubLost, HubSilent,
                      HubStopped, Joined, Listening, LogLine, ModelReceived, ModelRefused,
                      ModeChanged, PairedWith, PairingRefused, PairingWait, Paused, Pushed,
                      Rejected, Resumed, Rejoining, RoundClosed, SessionFull, ShardReceived,
                      StateChanged, Stopped, WorkerDone, WorkerJoined, WorkerLeft,
                      WorkerReady)
from ..service import FEED, Tagged
from . import progress_hub as hub
from . import progress_worker as worker
from . import words
from .progress_fields import ProgressFields
from .progress_rows import ACTIVE_STATES, RATE_WINDOW_S, mode_words

REFUSALS_EVERY_S = 60.0  # at most one "Refused requests" line in the log per this long
CHIPS = {"starting": "Starting", "waiting": "Waiting", "training": "Training",
         "finished": "Finished", "stopped": "Stopped", "failed": "Error"}
WAITING_FOR_WORKERS = "Waiting for workers"
STOPPING, LEAVING, PAUSED = "Stopping…", "Leaving…", "Paused"
# every text the chip shows (the window keeps it as wide as the widest: the head stays put)
CHIP_TEXTS = (*CHIPS.values(), WAITING_FOR_WORKERS, STOPPING, LEAVING, PAUSED)
BUSY_STATES = ("training", "done")  # rows whose device counts in "Devices busy"


class ProgressState(ProgressFields):
    """Everything a progress window shows, for a hub (``role="hub"``) or a worker."""

    _refusals_said = float("-inf")  # when the last refusal summary was logged
    mode = ""  # asynchronous updates, robust aggregation (progress_rows.mode_words); "": neither

    # ----------------------------------------------------------------- reading
    def idle(self) -> bool:
        """A hub's training has started but no worker trains now (each paused, left or
        still loading its data): the rounds wait, and so does the ETA."""
        return self.role == "hub" and self.phase == "training" and not any(
            row.state in ("ready", "training") for row in self.workers.values())

    def on_hold(self) -> bool:
        """No round closes for now, but the session goes on (a hub with no worker
        training, a paused worker): the window says the ETA is paused."""
        return self.active and not self.stopping and (bool(self.paused) or self.idle())

    def chip(self) -> tuple[str, str]:
        """The status chip: its text and the phase whose style it takes."""
        if not self.active:
            return CHIPS[self.phase], self.phase
        if self.stopping:
            return (STOPPING if self.role == "hub" else LEAVING), "stopped"
        if self.paused:
            return PAUSED, "waiting"
        if self.idle():
            return WAITING_FOR_WORKERS, "waiting"
        return CHIPS[self.phase], self.phase

    def chip_tip(self) -> str:
        """The chip's tooltip: the status, or why a hub's training waits."""
        if self.active and not self.stopping and self.idle():
            paused = sum(1 for row in self.workers.values() if row.state == "paused")
            return ("No worker is training" + (f" ({paused} paused)" if paused else "")
                    + ": the rounds go on when one joins or resumes")
        return self.status

    def eta_s(self) -> float | None:
        """Seconds to the last round at the recent pace; None before it is known, while
        no round closes (``on_hold``) and once a stop is under way."""
        if self.phase != "training" or len(self._rounds) < 2 or not self.total_rounds \
                or self.stopping or self.on_hold():
            return None
        (t0, v0), (t1, v1) = self._rounds[0], self._rounds[-1]
        if v1 <= v0 or t1 <= t0:
            return None
        return max(0, self.total_rounds - self.version) * (t1 - t0) / (v1 - v0)

    def elapsed_s(self) -> float | None:
        """Seconds of training: from its start to now, or to its end once it ended."""
        if self.started_at is None:
            return None
        return (self.ended_at if self.ended_at is not None else self.clock()) - self.started_at

    def bandwidth(self) -> float:
        """Bytes per second, both directions, over the recent window."""
        now = self.clock()
        recent = [(t, b) for t, b in self._traffic if now - t <= RATE_WINDOW_S]
        if len(recent) < 2 or recent[-1][0] <= recent[0][0]:
            return 0.0
        return (recent[-1][1] - recent[0][1]) / (recent[-1][0] - recent[0][0])

    def bytes_per_round(self) -> float | None:
        """Median bytes the hub moved per round over the recent rounds."""
        if not self._round_bytes:
            return None
        ordered = sorted(self._round_bytes)
        return float(ordered[len(ordered) // 2])

    def take_log(self) -> list[str]:
        """Log lines added since the last call."""
        lines, self._log = self._log, []
        return lines

    def active_workers(self) -> int:
        """Workers that joined and have not left (those still there at the end count)."""
        return sum(1 for w in self.workers.values() if w.state in ACTIVE_STATES)

    def devices_busy(self) -> float | None:
        """How busy the working devices are: the mean over the rows training now (or done,
        once the session finished) of their last round's compute share; None when no device
        works (every worker paused, removed, stopped or gone), so the card says "—"."""
        working = [row for row in self.workers.values() if row.state in BUSY_STATES]
        if not working:
            return None
        known = [row.busy for row in working if row.busy is not None]
        return sum(known) / len(known) if known else self.busy

    def latest_accuracy(self) -> float | None:
        """The last test accuracy the hub measured."""
        return self.accuracy[-1][1] if self.accuracy else None

    # ----------------------------------------------------------------- writing
    def apply(self, events: list[Tagged]) -> bool:
        """Fold a batch of events in; True if anything changed."""
        now = self.clock()
        for tagged in events:
            handler = HANDLERS.get((tagged.source, type(tagged.event)))
            if handler is not None:
                handler(self, tagged.event, now)
        if not self.active and self.ended_at is None:
            self.ended_at = now
        self._summarize_refusals(now)
        return bool(events)

    def _summarize_refusals(self, now: float) -> None:
        """One log line for the refusals counted since the last, at most every
        REFUSALS_EVERY_S (async mode refuses stale updates all the time: the workers table
        counts them); the last one once the session has ended."""
        if not self._refused or (now - self._refusals_said < REFUSALS_EVERY_S and self.active):
            return
        self._say(words.refusals_line(self._refused))
        self._refused.clear()
        self._refusals_said = now

    def set_traffic(self, sent: int, received: int) -> None:
        """Byte counters polled from a worker's channel or the hub's session (its totals,
        which hold what no round does: the shards sent before training started)."""
        self.bytes_sent, self.bytes_received = sent, received

    def tick(self) -> None:
        """Record the traffic counters for the bandwidth (call once per refresh). While a
        hub waits for workers, those that joined are alive as far as it knows (it reports
        a silent one within its heartbeat timeout): their "last seen" stays now."""
        now = self.clock()
        self._traffic.append((now, self.bytes_sent + self.bytes_received))
        if self.role == "hub" and self.phase in ("starting", "waiting"):
            for row in self.workers.values():
                if row.state in ("joining", "loading data", "ready"):
                    row.last_seen = now

    def stop_asked(self) -> None:
        """The window's Stop (or Leave) was pressed: the chip says so at once."""
        self._stopping()

    def note(self, line: str) -> None:
        """Add a line to the log (from the window's own actions)."""
        self._say(line)


def worker_joined(s: ProgressState, e: Joined, now: float) -> None:
    """A worker's own Joined (progress_worker.joined), and how its hub applies updates,
    for the subtitle."""
    worker.joined(s, e, now)
    s.mode = mode_words(e.updates, e.aggregation)


Handler = Callable[[ProgressState, Any, float], None]

# Every event a window folds in, by (source, type): grep an event's name to find its handler.
HANDLERS: dict[tuple[str, type[Event]], Handler] = {
    # the hub's session and its service (a hub's window)
    ("hub", Listening): hub.listening,
    ("hub", Advertising): hub.advertising,
    ("hub", LogLine): hub.log_line,
    ("hub", WorkerJoined): hub.worker_joined,
    ("hub", WorkerLeft): hub.worker_left,
    ("hub", WorkerReady): hub.worker_ready,
    ("hub", StateChanged): hub.state_changed,
    ("hub", RoundClosed): hub.round_closed,
    ("hub", ModeChanged): hub.mode_changed,
    ("hub", Evaluated): hub.evaluated,
    ("hub", Rejected): hub.rejected,
    ("hub", PairingRefused): hub.pairing_refused,
    ("hub", ModelRefused): hub.model_refused,
    ("hub", AllRefused): hub.all_refused,
    ("hub", Finished): hub.finished,
    ("hub", Stopped): hub.stopped,
    ("hub", DiskError): hub.disk_error,
    ("hub", Failed): hub.failed,
    ("hub", Ended): hub.ended,
    # the host's own worker (a hub's window)
    ("local", Joined): hub.local_joined,
    ("local", Failed): hub.local_failed,
    # this app's worker and its service (a worker's window)
    ("worker", DeviceChosen): worker.device_chosen,
    ("worker", PairedWith): worker.paired_with,
    ("worker", Joined): worker_joined,
    ("worker", ModelReceived): worker.model_received,
    ("worker", ShardReceived): worker.shard_received,
    ("worker", Pushed): worker.pushed,
    ("worker", HubSilent): worker.hub_silent,
    ("worker", HubLost): worker.hub_lost,
    ("worker", HubBack): worker.hub_back,
    ("worker", HubStopped): worker.hub_stopped,
    ("worker", PairingWait): worker.pairing_wait,
    ("worker", SessionFull): worker.session_full,
    ("worker", Rejoining): worker.rejoining,
    ("worker", Paused): worker.paused,
    ("worker", Resumed): worker.resumed,
    ("worker", WorkerDone): worker.worker_done,
    ("worker", Failed): worker.failed,
    ("worker", CodeRefused): worker.code_refused,
    ("worker", Ended): worker.ended,
    # the hub's events as the worker hears them (a worker's window)
    (FEED, HubStopped): worker.hub_stopped,
    (FEED, WorkerJoined): worker.feed_worker_joined,
    (FEED, WorkerLeft): worker.feed_worker_left,
    (FEED, WorkerReady): hub.worker_ready,
    (FEED, ModeChanged): hub.mode_changed,
    (FEED, RoundClosed): worker.feed_round_closed,
    (FEED, Evaluated): worker.feed_evaluated,
    (FEED, StateChanged): worker.feed_state_changed,
    (FEED, Finished): worker.feed_finished,
}
