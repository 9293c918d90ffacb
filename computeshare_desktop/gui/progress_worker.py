"""A worker's window: how its own session's events, and the hub's feed, change a ProgressState.

Plain functions ``(state, event, now)``, called only through ``progress_state.HANDLERS``.
They read and write the fields of a ``ProgressFields`` and its helpers (``_say``,
``_progress``...), as ProgressState's methods did; they never import ``progress_state``. No Qt.

The feed (``feed_*``) is the hub's event port as this worker hears it: every worker's
counters, the test accuracy and the final result, which its own session does not know.
"""

from __future__ import annotations

from ..events import (CodeRefused, DeviceChosen, Ended, Evaluated, Failed, Finished, HubBack,
                      HubLost, HubSilent, HubStopped, Joined, ModelReceived, PairedWith,
                      PairingWait, Paused, Pushed, Resumed,
                      Rejoining, RoundClosed, SessionFull, ShardReceived, StateChanged,
                      WorkerDone, WorkerJoined, WorkerLeft)
from . import progress_hub, words
from ..service.options import JoinTarget
from ..worker.pause import pause_text
from .formatting import percent
from .progress_fields import LeftBehind, ProgressFields
from .progress_rows import ACTIVE_STATES, LIVE_STATES, FinalResult, WorkerRow

STOPPED_BY_HOST = "The host stopped the session"
# the reject codes a removed machine hears (kicked, or blocked): no retry, no fault
REMOVED_CODES = ("BANNED", "BLOCKED")
# What worker windows whose host stopped the session left behind, by hub (hub_of): the next
# window of this app for that hub takes it once, and goes on from it if its session does.
_LEFT: dict[str, LeftBehind] = {}


def hub_of(target: JoinTarget | None) -> str:
    """The hub a worker's window is for: its key when known, else its address."""
    if target is None:
        return ""
    return target.expected_key or f"{target.host}:{target.port}"


def leave_behind(hub: str, s: ProgressFields) -> None:
    """A worker's window closes: if its host stopped the session, keep its curves and
    counts for the window that comes back to it."""
    if s.stopped_at is None or not (s.loss or s.pushed or s.accuracy):
        return
    _LEFT[hub] = LeftBehind(s.stopped_at, tuple(s.loss), tuple(s.loss_smooth),
                            tuple(s.compute_ms), tuple(s.accuracy), s.pushed, s.rejected)


def pick_up(hub: str) -> LeftBehind | None:
    """What an earlier window for ``hub`` left behind (once), for a new worker window."""
    return _LEFT.pop(hub, None)


def _go_on(s: ProgressFields, version: int) -> None:
    """The first round this window hears (a model version): if its session goes on from
    where the earlier window's host stopped it (resumed; a new session starts at 0), its
    curves and counts go on from the earlier window's instead of starting again."""
    earlier, s.earlier = s.earlier, None
    if earlier is None or earlier.stopped_at <= 0 or version < earlier.stopped_at:
        return
    s.loss[:0], s.loss_smooth[:0] = earlier.loss, earlier.loss_smooth
    s.compute_ms[:0], s.accuracy[:0] = earlier.compute_ms, earlier.accuracy
    s.pushed_before, s.rejected_before = earlier.pushed, earlier.rejected
    s.pushed, s.rejected = s.pushed + earlier.pushed, s.rejected + earlier.rejected
    s._say(f"Back in the session from round {earlier.stopped_at:,}: {earlier.pushed:,} "
           "gradients pushed before the stop")


def device_chosen(s: ProgressFields, e: DeviceChosen, now: float) -> None:
    """Log the device this machine trains on."""
    s._say(f"Training device: {e.description}" + (f" ({e.note})" if e.note else ""))


def paired_with(s: ProgressFields, e: PairedWith, now: float) -> None:
    """Log the hub's key."""
    s._say(f"Paired with the hub (key {e.hub_key})")


def joined(s: ProgressFields, e: Joined, now: float) -> None:
    """This machine's row, under its (possibly new) worker id, loading its data."""
    s.total_rounds, s.batch_size = e.rounds, e.batch_size
    if s.worker_id is not None and s.worker_id != e.worker_id:
        s.workers.pop(s.worker_id, None)  # joined again under a new id
    s.worker_id = e.worker_id
    s.workers[e.worker_id] = WorkerRow(e.worker_id, _mine(s.name), e.device, last_seen=now,
                                       state="loading data")
    if e.state == "training":  # a running session: it takes over a free shard
        s.phase, s.status = "waiting", "Joined a running session: loading data"
    else:
        s.phase, s.status = "waiting", "Waiting for the hub to start training"
    s._say(f"Joined as worker {e.worker_id}: shard {e.shard + 1} of "
           f"{e.num_shards}, {e.model} on {e.dataset}, {e.rounds} rounds")


def model_received(s: ProgressFields, e: ModelReceived, now: float) -> None:
    """Show and log what this machine trains, and how it got it (built-in, or the graph
    checked)."""
    s.received = e.describe()
    s._say(s.received)


def shard_received(s: ProgressFields, e: ShardReceived, now: float) -> None:
    """Once the whole shard is in, this machine's row is ready."""
    if e.received >= e.total:
        s._say(f"Received this machine's shard: {e.total} images")
        row = _own_row(s)
        if row is not None and row.state == "loading data":
            row.state = "ready"


def pushed(s: ProgressFields, e: Pushed, now: float) -> None:
    """This machine's gradient: loss, compute time and its own counters (after the end,
    only the counters: the round the end named stays the window's). Counted on from an
    earlier window's, when this worker came back to its session."""
    _go_on(s, e.version)
    pushed, rejected = s.pushed_before + e.pushed, s.rejected_before + e.rejected
    if not s.active:
        s.pushed, s.rejected = pushed, rejected
        return
    version = e.version + max(1, e.steps)
    s._progress(version, e.loss, now)
    s.compute_ms.append((version, 1000 * e.compute_s))
    s._silent = False
    s.pushed, s.rejected = pushed, rejected
    row = _own_row(s)
    if row is not None and not s._fed:  # the hub's rounds, once heard, fill the table
        row.progress(now, pushed, rejected, pushed * s.batch_size)
        row.state = "training"


SILENT = "The hub is not answering: retrying…"


def hub_silent(s: ProgressFields, e: HubSilent, now: float) -> None:
    """Say it in the status line: each retry is in the log once already, as the worker's
    own line ("no answer from the hub; retrying in 0.5 s")."""
    s.status = SILENT
    s._silent = True


def hub_lost(s: ProgressFields, e: HubLost, now: float) -> None:
    """A warning banner: the hub has been silent long enough to say so."""
    s._alert(f"The hub has not answered for {e.silent_s:.0f} s: it may have gone "
             f"or the network is down. Still trying for up to "
             f"{e.give_up_s / 60:.0f} min…", "warning")
    s._say("The hub stopped answering")


def hub_back(s: ProgressFields, e: HubBack, now: float) -> None:
    """The hub answers again: a warning banner goes (an error stays)."""
    if s.banner is not None and s.banner[0] == "warning":
        s._alert(None)
    s._say("The hub answers again")


def hub_stopped(s: ProgressFields, e: HubStopped, now: float) -> None:
    """The host stopped the session (heard from this worker's session and the feed: said
    once). The hub's round is the one the header, banner and log show."""
    if s.phase == "stopped" and s.status.startswith(STOPPED_BY_HOST):
        return
    s.phase, s.version, s.stopped_at = "stopped", e.version, e.version
    s.status = f"{STOPPED_BY_HOST} at round {e.version:,}"
    s._alert(f"{s.status}. Its model is saved; join again if the host resumes it.", "error")
    s._say(s.status)
    _end_rows(s, "stopped", "stopped")


def pairing_wait(s: ProgressFields, e: PairingWait, now: float) -> None:
    """Log how long the hub asked this worker to wait."""
    s._say(f"{words.refusal(e.code)} Trying again in {e.retry_after:.0f} s.")


def session_full(s: ProgressFields, e: SessionFull, now: float) -> None:
    """Waiting for a free shard."""
    s.status = "The session is full: waiting for a free shard"


def paused(s: ProgressFields, e: Paused, now: float) -> None:
    """This worker paused (its person, or the battery): the chip and its own row say so;
    the line beside the Pause button says why (pause_control)."""
    s.paused = s.status = pause_text(e.reason)
    row = _own_row(s)
    if row is not None and row.state in LIVE_STATES:
        row.state = "paused"


def resumed(s: ProgressFields, e: Resumed, now: float) -> None:
    """It resumes: it joins again (its Joined gives its row back, under its id: the hub
    knows this machine's key)."""
    s.paused = ""
    s.status = "Resuming: joining the session again"
    s._say(s.status)
    row = _own_row(s)
    if row is not None and row.state == "paused":
        row.state = "joining"


def rejoining(s: ProgressFields, e: Rejoining, now: float) -> None:
    """Log that this worker joins again."""
    s._say("The hub restarted or forgot this worker: joining again")


def worker_done(s: ProgressFields, e: WorkerDone, now: float) -> None:
    """This worker left, or the session finished: its own result."""
    pushed, rejected = s.pushed_before + e.pushed, s.rejected_before + e.rejected
    if e.left:
        s.phase, s.status = "stopped", "You left the session"
        s._say(f"Left the session after pushing {pushed} gradients")
        for wid, row in s.workers.items():  # this window no longer hears the hub
            if row.state in ACTIVE_STATES:
                row.state = "left" if wid == s.worker_id else "not followed"
    elif s.active:
        s.pushed, s.rejected = pushed, rejected
        s.version = max(s.version, e.version)
        _end_rows(s, "done", "done")
        s.final = _worker_final(s)
        s.phase = "finished"
        s.status = f"Session finished: {pushed} gradients pushed"
        s._say(f"Session finished: {pushed} gradients pushed, {rejected} refused")


def failed(s: ProgressFields, e: Failed, now: float) -> None:
    """This worker failed; removed by the host, it ended (no fault, nothing to retry). A
    refusal reads as the words' sentence for its code, never "(BANNED)"."""
    if e.code in REMOVED_CODES:
        text = words.refusal(e.code)
        s.phase, s.status = "stopped", words.ending(e.code).rstrip(".")
        s._alert(text, "error")
        s._say(text)
        _end_rows(s, "removed", "not followed")
        return
    s._fail(words.failure(e.code, e.message))
    _end_rows(s, "stopped", "not followed")


def code_refused(s: ProgressFields, e: CodeRefused, now: float) -> None:
    """The hub offered code this machine's person has not approved: the window asks."""
    s.code_offer = e
    s._say(f"Refused the hub's code {e.model} (sha256 {e.sha256}): not approved")


def ended(s: ProgressFields, e: Ended, now: float) -> None:
    """The worker's thread has ended; a session still running counts as stopped."""
    s.closed = True
    if s.active:
        s.phase, s.status = "stopped", "Stopped"
    _end_rows(s, "stopped", "not followed")


def _end_rows(s: ProgressFields, mine: str, others: str) -> None:
    """Once the session ended for this worker, no row still says it trains: its own
    reads ``mine``, the others ``others`` (this window no longer hears of them)."""
    for wid, row in s.workers.items():
        if wid == s.worker_id and row.state == "paused":
            row.state = mine
        elif row.state in LIVE_STATES:
            row.state = mine if wid == s.worker_id else others


def _own_row(s: ProgressFields) -> WorkerRow | None:
    return None if s.worker_id is None else s.workers.get(s.worker_id)


def _mine(name: str) -> str:
    return f"{name} (this machine)"


def _worker_final(s: ProgressFields) -> FinalResult:
    """This machine's contribution, with the hub's final accuracy once heard."""
    h = s._hub_final
    if h is None:
        return FinalResult(s.version, pushed=s.pushed, rejected=s.rejected)
    return FinalResult(h.version, h.accuracy, h.model_path, h.seconds,
                       pushed=s.pushed, rejected=s.rejected)


# ----------------------------------------------------------------- the hub's feed
def feed_worker_joined(s: ProgressFields, e: WorkerJoined, now: float) -> None:
    """Another worker's row (this machine's own comes from ``joined``)."""
    w = e.worker
    if w.id == s.worker_id:
        return
    s._forget_earlier_row(w)
    s.workers.setdefault(w.id, WorkerRow(w.id, w.name, w.device, last_seen=now,
                                         state="loading data", key=w.key))
    s._say(f"Worker {w.id} joined: {w.name} ({w.device})")


def feed_worker_left(s: ProgressFields, e: WorkerLeft, now: float) -> None:
    """Another worker left, as the hub's window shows it."""
    if e.worker.id != s.worker_id:
        progress_hub.worker_left(s, e, now)


def feed_round_closed(s: ProgressFields, e: RoundClosed, now: float) -> None:
    """Every worker's counters; the loss curve stays this machine's own."""
    s._fed = True
    _go_on(s, e.version - max(1, e.steps))  # the model version the round started from
    s._round_work(e)
    if e.version > s.version and s.phase in ("starting", "waiting"):
        s.phase, s.started_at = "training", s.started_at or now
    for w in e.workers:
        mine = w.id == s.worker_id
        row = s.workers.get(w.id)
        if row is None:
            s._forget_earlier_row(w)
            row = s.workers[w.id] = WorkerRow(
                w.id, _mine(w.name) if mine else w.name, w.device, key=w.key)
        row.progress(now, w.pushed, w.rejected, w.samples)
        row.work(w)
        if s.active and not (mine and s.paused):  # a round in flight at the end (or a
            row.state = "training" if w.ready else "loading data"  # pause) keeps it


def feed_evaluated(s: ProgressFields, e: Evaluated, now: float) -> None:
    """A point on the accuracy curve (a repeat of a version replaces it)."""
    _go_on(s, e.version)
    if s.accuracy and s.accuracy[-1][0] == e.version:
        s.accuracy[-1] = (e.version, e.accuracy)
    else:
        s.accuracy.append((e.version, e.accuracy))
    s._say(f"Hub: round {e.version} test accuracy {percent(e.accuracy)}"
           + (" (final)" if e.final else ""))


def feed_state_changed(s: ProgressFields, e: StateChanged, now: float) -> None:
    """All rounds done: the hub evaluates while this worker waits."""
    if e.state == "done":
        s._all_done = True
    if e.state == "done" and s.active:
        s.status = "All rounds done: the hub is evaluating the model…"


def feed_finished(s: ProgressFields, e: Finished, now: float) -> None:
    """The hub's final result, folded into this worker's own once it has one."""
    s._hub_final = e
    s.version = max(s.version, e.version)
    for row in s.workers.values():
        if row.state in LIVE_STATES:
            row.state = "done"
    s._say(f"The hub finished: test accuracy {percent(e.accuracy)} after "
           f"{e.version:,} rounds")
    if s.final is not None:  # this worker's Done came first
        s.final = _worker_final(s)
