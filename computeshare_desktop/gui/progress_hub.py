"""A hub's window: how its session's events, and its host's own worker's, change a ProgressState.

Plain functions ``(state, event, now)``, called only through ``progress_state.HANDLERS``.
They read and write the fields of a ``ProgressFields`` and its helpers (``_say``,
``_progress``...), as ProgressState's methods did; they never import ``progress_state``. No Qt.
"""

from __future__ import annotations

from typing import Any, Callable

from ..events import (AllRefused, Advertising, DiskError, Ended, Evaluated, Failed, Finished,
                      Joined, LeaveReason, Listening, LogLine, ModelRefused, ModeChanged,
                      PairingRefused, Rejected, RoundClosed, StateChanged, Stopped, WorkerJoined,
                      WorkerLeft, WorkerReady)
from ..hub.rejects import ROUTINE
from . import words
from .formatting import percent
from .progress_fields import ProgressFields
from .progress_rows import LIVE_STATES, FinalResult, WorkerRow

ROUTINE_CODES = frozenset(code.value for code in ROUTINE)
WAITING = "Waiting for workers to join"
# its ModelRefused follows, with the reason: one log line
SAID_ELSEWHERE = (LeaveReason.MODEL_REFUSED,)


def hub_traffic(runner: Any) -> Callable[[], tuple[int, int]]:
    """What the hub's window polls for Sent / received: every byte its session sent and
    received (hub/traffic.py), the shards downloaded before training included, which no
    round's ``bytes_out`` holds; (0, 0) until the session is built."""
    def totals() -> tuple[int, int]:
        session = getattr(runner, "session", None)  # read-only for views (HostService)
        return (0, 0) if session is None else session.core.traffic.totals()
    return totals


def listening(s: ProgressFields, e: Listening, now: float) -> None:
    """The hub is up: where workers reach it, and it waits for them."""
    s.port, s.out_dir, s.addresses = e.port, e.out_dir, list(e.addresses)
    s.phase, s.status = "waiting", WAITING
    s._say(f"Hub listening on {e.bind}:{e.port} (events {e.pub_port}, "
           f"pairing {e.pair_port}); hub key {e.hub_key}")


def advertising(s: ProgressFields, e: Advertising, now: float) -> None:
    """Log the name the hub is announced under."""
    s._say(f"Announced on the LAN as “{e.name}”")


def log_line(s: ProgressFields, e: LogLine, now: float) -> None:
    """Log a line of the hub's, as a sentence."""
    s._say(words.log_sentence(e.text))


def worker_joined(s: ProgressFields, e: WorkerJoined, now: float) -> None:
    """A new row for the worker, loading its data."""
    w = e.worker
    s._forget_earlier_row(w)
    s.workers[w.id] = WorkerRow(w.id, w.name, w.device, last_seen=now,
                                state="loading data", key=w.key)
    if s.refusal_banner:  # someone came after the refusals: they are no longer the news
        s._alert(None)
        if s.phase == "waiting":
            s.status = WAITING
    if e.returning == "paused":  # the same machine, its id and counts kept (hub/membership)
        s._say(f"Worker {w.id} ({w.name}) resumed")
        return
    s._say(f"Worker {w.id} {'rejoined' if e.returning else 'joined'}: {w.name} ({w.device}), "
           f"shard {w.shard + 1} of {s.expected_workers or '?'}")


def worker_ready(s: ProgressFields, e: WorkerReady, now: float) -> None:
    """The worker has its data: ready, or training if the session already is."""
    row = s.workers.get(e.worker.id)
    if row is not None:
        row.last_seen = now
        if row.state in ("joining", "loading data") and not s.stopping:
            row.state = "training" if s.phase == "training" else "ready"


def worker_left(s: ProgressFields, e: WorkerLeft, now: float) -> None:
    """The worker's row takes the reason as its state (the table shows its words); a
    goodbye after the last round is "done"."""
    w, reason = e.worker, e.reason
    finished = reason == LeaveReason.LEFT and s._all_done  # its goodbye after the last round
    row = s.workers.get(w.id)
    if row is not None:
        row.state = "done" if finished else reason
    if not finished and reason not in SAID_ELSEWHERE:
        s._say(f"Worker {w.id} ({w.name}) {words.leaving(reason)}")


def state_changed(s: ProgressFields, e: StateChanged, now: float) -> None:
    """Training starts the clock; "done" means the hub evaluates and saves; "stopped":
    the hub is stopping (its Stopped follows once the model is saved)."""
    if e.state == "training" and s.phase in ("starting", "waiting"):
        s.phase, s.started_at = "training", now
        s.status = "Training"
        s._say(f"All {len(s.workers)} worker(s) ready: training started")
    elif e.state == "done":
        s._all_done = True
        s.status = "All rounds done: evaluating and saving the model…"
        s._say(s.status)
    elif e.state == "stopped":
        s._stopping()


def round_closed(s: ProgressFields, e: RoundClosed, now: float) -> None:
    """A round's loss, traffic and every worker's counters."""
    s._progress(e.version, e.loss, now)
    s.bytes_received += e.bytes_in
    s.bytes_sent += e.bytes_out
    s._round_work(e)
    for w in e.workers:
        row = s.workers.get(w.id)
        if row is None:
            s._forget_earlier_row(w)
            row = s.workers[w.id] = WorkerRow(w.id, w.name, w.device, key=w.key)
        row.progress(now, w.pushed, w.rejected, w.samples)
        row.work(w)
        if not s.stopping:  # a round that closes while stopping trains no one on
            row.state = "training" if w.ready else "loading data"
    if not e.complete:
        s._say(f"Round {e.round} closed at its deadline with {e.contributors} "
               "gradient(s)")


def mode_changed(s: ProgressFields, e: ModeChanged, now: float) -> None:
    """Log the preset the hub switched to, and the measurements behind it."""
    s._say(f"Measured {e.compute_s * 1000:.0f} ms of compute and "
           f"{e.other_s * 1000:.0f} ms of communication a round: now training with "
           f"the “{e.preset}” preset ({e.codec}, {e.local_steps} local steps)")


def evaluated(s: ProgressFields, e: Evaluated, now: float) -> None:
    """A point on the accuracy curve."""
    s.accuracy.append((e.version, e.accuracy))
    s._say(f"Round {e.version}: test accuracy {percent(e.accuracy)} "
           f"(loss {e.loss:.4f})")


def rejected(s: ProgressFields, e: Rejected, now: float) -> None:
    """Count a routine refusal (STALE, DUPLICATE); ``apply`` logs one summary a minute at
    most. The hub's own log says the others (hub/rejects.py), which this window shows."""
    if e.code in ROUTINE_CODES:
        s._refused[e.code] += 1


def model_refused(s: ProgressFields, e: ModelRefused, now: float) -> None:
    """A worker that refused the model (or was refused it), and why: a banner and the log."""
    text = f"Worker {e.name} cannot train this model: {words.refusal_for_app(e.reason)}"
    s._say(text)
    s._alert(text, "warning")
    s.refusal_banner = True


def all_refused(s: ProgressFields, e: AllRefused, now: float) -> None:
    """Nobody left can train the model: an error banner; the session waits on (Stop ends)."""
    s._alert(f"No worker can train this model: {e.who()} refused it. The last, {e.name}: "
             f"{words.refusal_for_app(e.reason)}. The session waits for another worker; "
             "Stop ends it.", "error")
    s.refusal_banner = True
    s.status = "Every worker refused the model: waiting for another"
    s._say(f"No worker can train this model: {e.who()} refused it, and none is left")


def pairing_refused(s: ProgressFields, e: PairingRefused, now: float) -> None:
    """A refused pairing attempt: the hub's own log says it once, and this window shows that
    line (a wrong PIN: who, from where, how many in a row, and any pause; a lock-out: in the
    refusal summary), so nothing more is said here."""


def finished(s: ProgressFields, e: Finished, now: float) -> None:
    """The final result; the workers still training are done."""
    s.final = FinalResult(e.version, e.accuracy, e.model_path, e.seconds)
    s.phase, s.version = "finished", e.version
    for row in s.workers.values():
        if row.state == "training":
            row.state = "done"
    s.status = f"Finished: test accuracy {percent(e.accuracy)}"
    s._say(f"Finished: test accuracy {percent(e.accuracy)} after {e.version} "
           f"rounds in {e.seconds:.1f} s; model saved to {e.model_path}")


def stopped(s: ProgressFields, e: Stopped, now: float) -> None:
    """Stopped early: where the model is saved and how to resume."""
    s.phase, s.status = "stopped", f"Stopped at round {e.version:,}"
    s.out_dir = e.out_dir
    _rows_stopped(s)
    saved = f"model saved to {e.model_path}" if e.model_path else \
        "the model could not be saved (see the log)"
    s._say(f"Stopped at round {e.version:,}; {saved}. Resume it from Recent sessions "
           "in the main window.")


def disk_error(s: ProgressFields, e: DiskError, now: float) -> None:
    """A warning banner: a write failed but training goes on."""
    s._alert(f"Could not write the {e.what} to disk ({e.error}): training goes "
             "on; free some space or check the output folder", "warning")


def failed(s: ProgressFields, e: Failed, now: float) -> None:
    """The hub failed."""
    s._fail(e.message)


def ended(s: ProgressFields, e: Ended, now: float) -> None:
    """The hub's thread has ended; a session still running counts as stopped."""
    s.closed = True
    if s.phase in ("starting", "waiting", "training"):
        s.phase, s.status = "stopped", "Stopped"
    _rows_stopped(s)


def _rows_stopped(s: ProgressFields) -> None:
    """The session is over: no row still says its worker trains."""
    for row in s.workers.values():
        if row.state in LIVE_STATES:
            row.state = "stopped"


# ----------------------------------------------------------------- this host's worker
def local_joined(s: ProgressFields, e: Joined, now: float) -> None:
    """Log that the host trains too."""
    s._say(f"This machine trains too, on {e.device}")


def local_failed(s: ProgressFields, e: Failed, now: float) -> None:
    """Log the host's worker's failure; the hub's session goes on."""
    s._say(f"This machine's worker stopped: {e.message}")
