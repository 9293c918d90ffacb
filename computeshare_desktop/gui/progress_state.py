"""The view model of a progress window: core events in, what to show out. No Qt.

The hub and the worker speak different event vocabularies (see HubSession and
WorkerSession); ``ProgressState.apply`` folds a batch of either into one state, and the
widgets only render it. Times come from ``clock`` when a batch is applied: the GUI drains
every ~100 ms, which is precise enough for rates, ETAs and "last seen".

A worker's window folds two streams: its own session's events (``source="worker"``: loss,
compute time, its pushes) and the hub's, relayed from the hub's event port
(``source="feed"``): test accuracy, every worker's counters and the final result.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from typing import Any, Callable

from ..events import (Advertising, DeviceChosen, DiskError, Ended, Evaluated, Event, Failed,
                      Finished, HubBack, HubLost, HubSilent, HubStopped, Joined, Listening,
                      LogLine, ModeChanged, PairedWith, PairingRefused, PairingWait, Pushed,
                      Rejected, Rejoining, RoundClosed, SessionFull, ShardReceived,
                      StateChanged, Stopped, WorkerDone, WorkerInfo, WorkerJoined,
                      WorkerLeft, WorkerReady)
from ..service import FEED, Tagged
from .formatting import percent
from .progress_rows import RATE_WINDOW_S, FinalResult, WorkerRow

LEAVE_REASONS = {"left": "left the session", "silent": "stopped answering",
                 "kicked": "removed", "arch_mismatch": "builds a different model",
                 "stuck": "missed several rounds: its shard was freed"}
ACTIVE_STATES = ("joining", "loading data", "ready", "training", "done")
SMOOTHING = 0.1  # weight of the newest loss in the smoothed curve (an EMA, as TensorBoard)
ETA_ROUNDS = 40  # the ETA uses the pace of the last this-many rounds


class ProgressState:
    """Everything a progress window shows, for a hub (``role="hub"``) or a worker."""

    def __init__(self, role: str, *, total_rounds: int = 0, name: str = "",
                 expected_workers: int = 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.role, self.total_rounds, self.name, self.clock = role, total_rounds, name, clock
        self.expected_workers = expected_workers
        self.phase = "starting"  # starting, waiting, training, finished, stopped, failed
        self.status = "Starting…"
        self.version = 0
        self.loss: list[tuple[int, float]] = []
        self.loss_smooth: list[tuple[int, float]] = []
        self.compute_ms: list[tuple[int, float]] = []  # this worker's time per gradient
        self.worker_id: int | None = None  # on a worker: its id at the hub
        self.pushed = self.rejected = 0  # on a worker: its own gradients
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
        self.started_at: float | None = None
        self.ended_at: float | None = None  # when it stopped making progress (elapsed stops)
        self._rounds: deque[tuple[float, int]] = deque(maxlen=ETA_ROUNDS)
        self._round_bytes: deque[int] = deque(maxlen=ETA_ROUNDS)  # both directions, at the hub
        self.busy: float | None = None  # the workers' mean compute / round time, last round
        self._traffic: deque[tuple[float, int]] = deque(maxlen=256)
        self._log: list[str] = []
        self._refused: Counter[str] = Counter()
        self._silent = False
        self._all_done = False  # the hub said every round is done
        self.banner: tuple[str, str] | None = None  # (level, text) shown above everything
        self._handlers: dict[tuple[str, type[Event]], Callable[[Any, float], None]] = {
            # the hub's session and its service (a hub's window)
            ("hub", Listening): self._hub_listening,
            ("hub", Advertising): self._hub_advertising,
            ("hub", LogLine): self._hub_log,
            ("hub", WorkerJoined): self._hub_worker_joined,
            ("hub", WorkerLeft): self._hub_worker_left,
            ("hub", WorkerReady): self._hub_worker_ready,
            ("hub", StateChanged): self._hub_state,
            ("hub", RoundClosed): self._hub_round,
            ("hub", ModeChanged): self._hub_mode,
            ("hub", Evaluated): self._hub_eval,
            ("hub", Rejected): self._hub_rejected,
            ("hub", PairingRefused): self._hub_pairing_refused,
            ("hub", Finished): self._hub_finished,
            ("hub", Stopped): self._hub_stopped,
            ("hub", DiskError): self._hub_disk_error,
            ("hub", Failed): self._hub_error,
            ("hub", Ended): self._hub_closed,
            # the host's own worker (a hub's window)
            ("local", Joined): self._local_joined,
            ("local", Failed): self._local_error,
            # this app's worker and its service (a worker's window)
            ("worker", DeviceChosen): self._worker_device,
            ("worker", PairedWith): self._worker_paired,
            ("worker", Joined): self._worker_joined,
            ("worker", ShardReceived): self._worker_shard,
            ("worker", Pushed): self._worker_round,
            ("worker", HubSilent): self._worker_hub_silent,
            ("worker", HubLost): self._worker_hub_lost,
            ("worker", HubBack): self._worker_hub_back,
            ("worker", HubStopped): self._worker_hub_stopped,
            ("worker", PairingWait): self._worker_pairing_wait,
            ("worker", SessionFull): self._worker_session_full,
            ("worker", Rejoining): self._worker_rejoin,
            ("worker", WorkerDone): self._worker_done,
            ("worker", Failed): self._worker_error,
            ("worker", Ended): self._worker_stopped,
            # the hub's events as the worker hears them (a worker's window)
            (FEED, HubStopped): self._worker_hub_stopped,
            (FEED, WorkerJoined): self._feed_worker_joined,
            (FEED, WorkerLeft): self._feed_worker_left,
            (FEED, WorkerReady): self._hub_worker_ready,
            (FEED, ModeChanged): self._hub_mode,
            (FEED, RoundClosed): self._feed_round,
            (FEED, Evaluated): self._feed_eval,
            (FEED, StateChanged): self._feed_state,
            (FEED, Finished): self._feed_finished,
        }

    # ----------------------------------------------------------------- reading
    @property
    def active(self) -> bool:
        """True while the session can still make progress."""
        return self.phase in ("starting", "waiting", "training")

    def eta_s(self) -> float | None:
        """Seconds to the last round at the recent pace; None before it is known."""
        if self.phase != "training" or len(self._rounds) < 2 or not self.total_rounds:
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

    def latest_accuracy(self) -> float | None:
        """The last test accuracy the hub measured."""
        return self.accuracy[-1][1] if self.accuracy else None

    # ----------------------------------------------------------------- writing
    def apply(self, events: list[Tagged]) -> bool:
        """Fold a batch of events in; True if anything changed."""
        now = self.clock()
        for tagged in events:
            handler = self._handlers.get((tagged.source, type(tagged.event)))
            if handler is not None:
                handler(tagged.event, now)
        if not self.active and self.ended_at is None:
            self.ended_at = now
        if self._refused:
            summary = ", ".join(f"{n} × {code}" for code, n in sorted(self._refused.items()))
            self._say(f"Refused requests: {summary}")
            self._refused.clear()
        return bool(events)

    def set_traffic(self, sent: int, received: int) -> None:
        """Byte counters polled from a worker's channel."""
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

    def _say(self, line: str) -> None:
        self._log.append(line)

    def note(self, line: str) -> None:
        """Add a line to the log (from the window's own actions)."""
        self._say(line)

    def _fail(self, message: str) -> None:
        self.error, self.phase, self.status = message, "failed", message
        self._alert(message, "error")
        self._say(f"Error: {message}")

    def _alert(self, text: str | None, level: str = "warning") -> None:
        """The banner at the top of the window (None hides it)."""
        self.banner = None if text is None else (level, text)

    def _progress(self, version: int, loss: float, now: float) -> None:
        if self.phase in ("starting", "waiting"):
            self.phase, self.started_at = "training", self.started_at or now
        self.version = version
        self.loss.append((version, loss))
        last = self.loss_smooth[-1][1] if self.loss_smooth else loss
        self.loss_smooth.append((version, last + SMOOTHING * (loss - last)))
        self._rounds.append((now, version))
        self.status = f"Training: round {version} of {self.total_rounds or '?'}"

    # ----------------------------------------------------------------- hub events
    def _hub_listening(self, e: Listening, now: float) -> None:
        self.port, self.out_dir, self.addresses = e.port, e.out_dir, list(e.addresses)
        self.phase, self.status = "waiting", "Waiting for workers to join"
        self._say(f"Hub listening on {e.bind}:{e.port} (events {e.pub_port}, "
                  f"pairing {e.pair_port}); hub key {e.hub_key}")

    def _hub_advertising(self, e: Advertising, now: float) -> None:
        self._say(f"Announced on the LAN as “{e.name}”")

    def _hub_log(self, e: LogLine, now: float) -> None:
        self._say(e.text)

    def _hub_worker_joined(self, e: WorkerJoined, now: float) -> None:
        w = e.worker
        self._forget_earlier_row(w)
        self.workers[w.id] = WorkerRow(w.id, w.name, w.device, last_seen=now,
                                          state="loading data", key=w.key)
        self._say(f"Worker {w.id} joined: {w.name} ({w.device}), shard {w.shard + 1} of "
                  f"{self.expected_workers or '?'}")

    def _forget_earlier_row(self, w: WorkerInfo) -> None:
        """A machine that rejoins (a new worker id, the same key) keeps one row."""
        if not w.key:
            return
        for wid, row in list(self.workers.items()):
            if wid != w.id and row.key == w.key:
                del self.workers[wid]

    def _hub_worker_ready(self, e: WorkerReady, now: float) -> None:
        row = self.workers.get(e.worker.id)
        if row is not None:
            row.last_seen = now
            if row.state in ("joining", "loading data"):
                row.state = "training" if self.phase == "training" else "ready"

    def _hub_worker_left(self, e: WorkerLeft, now: float) -> None:
        w, reason = e.worker, e.reason
        why = LEAVE_REASONS.get(reason, reason)
        finished = reason == "left" and self._all_done  # its goodbye after the last round
        row = self.workers.get(w.id)
        if row is not None:
            row.state = "done" if finished else "left" if reason == "left" else why
        if not finished:
            self._say(f"Worker {w.id} ({w.name}) {why}")

    def _hub_state(self, e: StateChanged, now: float) -> None:
        if e.state == "training" and self.phase in ("starting", "waiting"):
            self.phase, self.started_at = "training", now
            self.status = "Training"
            self._say(f"All {len(self.workers)} worker(s) ready: training started")
        elif e.state == "done":
            self._all_done = True
            self.status = "All rounds done: evaluating and saving the model…"
            self._say(self.status)

    def _hub_round(self, e: RoundClosed, now: float) -> None:
        self._progress(e.version, e.loss, now)
        self.bytes_received += e.bytes_in
        self.bytes_sent += e.bytes_out
        self._round_work(e)
        for w in e.workers:
            row = self.workers.get(w.id)
            if row is None:
                self._forget_earlier_row(w)
                row = self.workers[w.id] = WorkerRow(w.id, w.name, w.device, key=w.key)
            row.progress(now, w.pushed, w.rejected, w.samples)
            row.work(w)
            row.state = "training" if w.ready else "loading data"
        if not e.complete:
            self._say(f"Round {e.round} closed at its deadline with {e.contributors} "
                      "gradient(s)")

    def _round_work(self, e: RoundClosed) -> None:
        """Bytes per round and how busy the devices were (hub round events)."""
        self._round_bytes.append(e.bytes_in + e.bytes_out)
        self.busy = e.busy

    def _hub_mode(self, e: ModeChanged, now: float) -> None:
        self._say(f"Measured {e.compute_s * 1000:.0f} ms of compute and "
                  f"{e.other_s * 1000:.0f} ms of communication a round: now training with "
                  f"the “{e.preset}” preset ({e.codec}, {e.local_steps} local steps)")

    def _hub_eval(self, e: Evaluated, now: float) -> None:
        self.accuracy.append((e.version, e.accuracy))
        self._say(f"Round {e.version}: test accuracy {percent(e.accuracy)} "
                  f"(loss {e.loss:.4f})")

    def _hub_rejected(self, e: Rejected, now: float) -> None:
        self._refused[e.code] += 1

    def _hub_pairing_refused(self, e: PairingRefused, now: float) -> None:
        self._say(f"A pairing attempt was refused ({e.code})")

    def _hub_finished(self, e: Finished, now: float) -> None:
        self.final = FinalResult(e.version, e.accuracy, e.model_path, e.seconds)
        self.phase, self.version = "finished", e.version
        for row in self.workers.values():
            if row.state == "training":
                row.state = "done"
        self.status = f"Finished: test accuracy {percent(e.accuracy)}"
        self._say(f"Finished: test accuracy {percent(e.accuracy)} after {e.version} "
                  f"rounds in {e.seconds:.1f} s; model saved to {e.model_path}")

    def _hub_stopped(self, e: Stopped, now: float) -> None:
        self.phase, self.status = "stopped", f"Stopped at round {e.version}"
        self.out_dir = e.out_dir
        saved = f"model saved to {e.model_path}" if e.model_path else \
            "the model could not be saved (see the log)"
        self._say(f"Stopped at round {e.version}; {saved}. Resume it from the main "
                  f"window's recent sessions, or: computeshare host --resume --out "
                  f"{e.out_dir}")

    def _hub_disk_error(self, e: DiskError, now: float) -> None:
        self._alert(f"Could not write the {e.what} to disk ({e.error}): training goes "
                    "on; free some space or check the output folder", "warning")

    def _hub_error(self, e: Failed, now: float) -> None:
        self._fail(e.message)

    def _hub_closed(self, e: Ended, now: float) -> None:
        self.closed = True
        if self.phase in ("starting", "waiting", "training"):
            self.phase, self.status = "stopped", "Stopped"

    # ----------------------------------------------------------------- this host's worker
    def _local_joined(self, e: Joined, now: float) -> None:
        self._say(f"This machine trains too, on {e.device}")

    def _local_error(self, e: Failed, now: float) -> None:
        self._say(f"This machine's worker stopped: {e.message}")

    # ----------------------------------------------------------------- worker events
    def _worker_device(self, e: DeviceChosen, now: float) -> None:
        self._say(f"Training device: {e.description}" + (f" ({e.note})" if e.note
                                                              else ""))

    def _worker_paired(self, e: PairedWith, now: float) -> None:
        self._say(f"Paired with the hub (key {e.hub_key})")

    def _worker_joined(self, e: Joined, now: float) -> None:
        self.total_rounds, self.batch_size = e.rounds, e.batch_size
        if self.worker_id is not None and self.worker_id != e.worker_id:
            self.workers.pop(self.worker_id, None)  # joined again under a new id
        self.worker_id = e.worker_id
        self.workers[e.worker_id] = WorkerRow(e.worker_id, self._mine(self.name),
                                                 e.device, last_seen=now,
                                                 state="loading data")
        if e.state == "training":  # a running session: it takes over a free shard
            self.phase, self.status = "waiting", "Joined a running session: loading data"
        else:
            self.phase, self.status = "waiting", "Waiting for the hub to start training"
        self._say(f"Joined as worker {e.worker_id}: shard {e.shard + 1} of "
                  f"{e.num_shards}, {e.model} on {e.dataset}, {e.rounds} rounds")

    def _worker_shard(self, e: ShardReceived, now: float) -> None:
        if e.received >= e.total:
            self._say(f"Received this machine's shard: {e.total} images")
            row = self._own_row()
            if row is not None and row.state == "loading data":
                row.state = "ready"

    def _worker_round(self, e: Pushed, now: float) -> None:
        version = e.version + max(1, e.steps)
        self._progress(version, e.loss, now)
        self.compute_ms.append((version, 1000 * e.compute_s))
        self._silent = False
        self.pushed, self.rejected = e.pushed, e.rejected
        row = self._own_row()
        if row is not None and not self._fed:  # the hub's rounds, once heard, fill the table
            row.progress(now, e.pushed, e.rejected, e.pushed * self.batch_size)
            row.state = "training"

    def _worker_hub_silent(self, e: HubSilent, now: float) -> None:
        if not self._silent:
            self._say("The hub is not answering: retrying…")
        self._silent = True

    def _worker_hub_lost(self, e: HubLost, now: float) -> None:
        self._alert(f"The hub has not answered for {e.silent_s:.0f} s: it may have gone "
                    f"or the network is down. Still trying for up to "
                    f"{e.give_up_s / 60:.0f} min…", "warning")
        self._say("The hub stopped answering")

    def _worker_hub_back(self, e: HubBack, now: float) -> None:
        if self.banner is not None and self.banner[0] == "warning":
            self._alert(None)
        self._say("The hub answers again")

    def _worker_hub_stopped(self, e: HubStopped, now: float) -> None:
        self.phase = "stopped"
        self.status = f"The host stopped the session at round {e.version}"
        self._alert(f"The host stopped the session at round {e.version}. Its model is "
                    "saved; join again if the host resumes it.", "error")
        self._say(self.status)

    def _worker_pairing_wait(self, e: PairingWait, now: float) -> None:
        self._say(f"The hub asked to wait {e.retry_after:.0f} s ({e.code})")

    def _worker_session_full(self, e: SessionFull, now: float) -> None:
        self.status = "The session is full: waiting for a free shard"

    def _worker_rejoin(self, e: Rejoining, now: float) -> None:
        self._say("The hub restarted or forgot this worker: joining again")

    def _worker_done(self, e: WorkerDone, now: float) -> None:
        if e.left:
            self.phase, self.status = "stopped", "You left the session"
            self._say(f"Left the session after pushing {e.pushed} gradients")
            for wid, row in self.workers.items():  # this window no longer hears the hub
                if row.state in ACTIVE_STATES:
                    row.state = "left" if wid == self.worker_id else "not followed"
        elif self.active:
            self.pushed, self.rejected = e.pushed, e.rejected
            self.final = self._worker_final()
            self.phase = "finished"
            self.status = f"Session finished: {e.pushed} gradients pushed"
            self._say(f"Session finished: {e.pushed} gradients pushed, {e.rejected} "
                      "refused")

    def _worker_error(self, e: Failed, now: float) -> None:
        self._fail(e.message)

    def _worker_stopped(self, e: Ended, now: float) -> None:
        self.closed = True
        if self.active:
            self.phase, self.status = "stopped", "Stopped"

    def _own_row(self) -> WorkerRow | None:
        return None if self.worker_id is None else self.workers.get(self.worker_id)

    @staticmethod
    def _mine(name: str) -> str:
        return f"{name} (this machine)"

    def _worker_final(self) -> FinalResult:
        """This machine's contribution, with the hub's final accuracy once heard."""
        h = self._hub_final
        if h is None:
            return FinalResult(self.version, pushed=self.pushed, rejected=self.rejected)
        return FinalResult(h.version, h.accuracy, h.model_path, h.seconds,
                           pushed=self.pushed, rejected=self.rejected)

    # ----------------------------------------------------------------- hub events, on a worker
    def _feed_worker_joined(self, e: WorkerJoined, now: float) -> None:
        w = e.worker
        if w.id == self.worker_id:
            return
        self._forget_earlier_row(w)
        self.workers.setdefault(w.id, WorkerRow(w.id, w.name, w.device, last_seen=now,
                                                   state="loading data", key=w.key))
        self._say(f"Worker {w.id} joined: {w.name} ({w.device})")

    def _feed_worker_left(self, e: WorkerLeft, now: float) -> None:
        if e.worker.id != self.worker_id:
            self._hub_worker_left(e, now)

    def _feed_round(self, e: RoundClosed, now: float) -> None:
        self._fed = True
        self._round_work(e)
        if e.version > self.version and self.phase in ("starting", "waiting"):
            self.phase, self.started_at = "training", self.started_at or now
        for w in e.workers:
            mine = w.id == self.worker_id
            row = self.workers.get(w.id)
            if row is None:
                self._forget_earlier_row(w)
                row = self.workers[w.id] = WorkerRow(
                    w.id, self._mine(w.name) if mine else w.name, w.device, key=w.key)
            row.progress(now, w.pushed, w.rejected, w.samples)
            row.work(w)
            row.state = "training" if w.ready else "loading data"

    def _feed_eval(self, e: Evaluated, now: float) -> None:
        if self.accuracy and self.accuracy[-1][0] == e.version:
            self.accuracy[-1] = (e.version, e.accuracy)
        else:
            self.accuracy.append((e.version, e.accuracy))
        self._say(f"Hub: round {e.version} test accuracy {percent(e.accuracy)}"
                  + (" (final)" if e.final else ""))

    def _feed_state(self, e: StateChanged, now: float) -> None:
        if e.state == "done":
            self._all_done = True
        if e.state == "done" and self.active:
            self.status = "All rounds done: the hub is evaluating the model…"

    def _feed_finished(self, e: Finished, now: float) -> None:
        self._hub_final = e
        for row in self.workers.values():
            if row.state == "training":
                row.state = "done"
        self._say(f"The hub finished: test accuracy {percent(e.accuracy)} after "
                  f"{e.version} rounds")
        if self.final is not None:  # this worker's Done came first
            self.final = self._worker_final()
