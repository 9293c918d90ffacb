"""The worker's protocol core: replies, results and ``now`` in, effects out. No sockets, no
clock, no threads, no compute.

It mirrors ``hub/core.py``: a driver (``driver.py`` for a real worker, the soak's
``SimWorker``) calls ``start`` and then one input per action it carried out, and gets the
next effects back (see effects.py). The core owns the whole protocol: pairing with the PIN
and the waits the hub may ask for, joining (a full session, a forgotten key), the model's
graph when the hub ships one (graphs.py: fetched after the Welcome, checked by the
compute's factory, refused with a GRAPH_REFUSED that tells the hub why), the shard, the
pull / compute / push rounds (rounds.py), every refusal the hub may send, rejoining, and the
goodbye. Retries, heartbeats and giving up on a silent hub are the driver's (liveness.py):
the core never sees a timeout.
"""

from __future__ import annotations

import logging
from enum import Enum
from typing import Any, Sequence

import torch

from ..errors import (ComputeShareError, HubStoppedError, HubUnreachableError,
                      LocalProtocolError, RejectedError, RemovedError)
from ..events import (HubStopped, Joined, ModelReceived, PairedWith, PairingWait, Paused,
                      Rejoining, Resumed, Resync, SessionFull, WorkerDone)
from ..graph import GraphRefused, require_release, torch_release
from ..protocol import MEANINGS, RejectCode, decode, encode
from ..protocol.messages import (MAX_STR_CHARS, Ack, Bye, Done, GraphData, GraphRefusal, Join,
                                 Model, Paired, PairReply, Ping, Reject, ShardData, Waiting,
                                 Welcome)
from ..protocol.wire import Frame
from .compute import Update
from .download import MAX_SHARD_REPLY, ShardDownload, check_shard
from .effects import Effect, Emit, Finish, Goodbye, Keep, Load, Prepare, Send, WaitUntil, Work
from .code import code_how
from .graphs import GRAPH_CHUNK, GraphDownload, ReceivedGraph
from .link import LinkMeter
from .options import WorkerOptions, WorkerResult
from .pairing import PairingRun, pause_for
from .pause import pause_text
from .recipe import Recipe
from .replica import Drift
from .rounds import PayloadFilter, Rounds
from .shard_reuse import CachedShard
from .updates import UpdateEncoder

log = logging.getLogger(__name__)

MAX_REPLY_FRAME = 256 * 1024 * 1024
FULL_RETRY_S = 2.0  # a full session is asked again after this long (within give_up_s)
BYE_TIMEOUT_S = 1.0  # the goodbye is sent once; the hub notices a silent worker anyway
PAUSE_POLL_S = 0.5  # how often a paused worker looks whether it may resume
REFUSED_PUSH = (RejectCode.STALE, RejectCode.NOT_TRAINING, RejectCode.NOT_FINITE,
                RejectCode.BAD_VERSION)  # the round's update is dropped; training goes on


class Phase(str, Enum):
    """What the core is waiting for."""

    PAIR_START = "pair_start"  # the hub's PAIR_REPLY
    PAIR_FINISH = "pair_finish"  # the hub's PAIRED
    PAIR_WAIT = "pair_wait"  # the end of a lock-out or busy spell (then a fresh run)
    JOIN = "join"  # the hub's WELCOME
    FULL_WAIT = "full_wait"  # time to ask a full session again
    GRAPH = "graph"  # a range of the model's graph
    PREPARE = "prepare"  # the compute's check of the session's model
    SHARD = "shard"  # a chunk of the shard
    KEEP = "keep"  # the shard cache's writing of a chunk
    LOAD = "load"  # the compute, built with the shard
    PULL = "pull"  # the next model (a long-poll)
    WORK = "work"  # the round's update
    REST = "rest"  # the end of the rest that max_rate asks for
    PUSH = "push"  # the hub's answer to our update
    PAUSE = "pause"  # the hub's answer to our pausing BYE
    PAUSED = "paused"  # the end of the pause (the person's, or the battery's)
    BYE = "bye"  # the goodbye to go out
    ENDED = "ended"  # nothing: Finish was returned


# The reply each request phase takes (DONE, REJECT aside).
EXPECTED: dict[Phase, type | tuple[type, ...]] = {
    Phase.PAIR_START: PairReply, Phase.PAIR_FINISH: Paired, Phase.JOIN: Welcome,
    Phase.GRAPH: GraphData, Phase.SHARD: ShardData, Phase.PULL: (Model, Waiting),
    Phase.PUSH: Ack, Phase.PAUSE: Ack}
PAIRING = (Phase.PAIR_START, Phase.PAIR_FINISH)
# DONE: the session is over
ENDS_ON_DONE = (Phase.GRAPH, Phase.SHARD, Phase.PULL, Phase.PUSH, Phase.PAUSE)


class WorkerCore:
    """One worker's side of the protocol, from pairing to the goodbye."""

    def __init__(self, options: WorkerOptions, *, device: str, worker_key: str,
                 expected_key: str | None = None, hub_key: str | None = None,
                 payload_filter: PayloadFilter | None = None) -> None:
        """``device``: how the worker describes its device to the hub; ``worker_key``: its
        long-term public key; ``expected_key``: the fingerprint of the hub key an advert
        announced; ``hub_key``: the hub's key from an earlier pairing (then no PIN is needed
        unless the hub has forgotten it); ``payload_filter(codec, payload, version)``: what
        goes on the wire for a push's payload (a seam for fault-injection tests)."""
        self.opts = options
        self.device = device
        self.worker_key = worker_key
        self.expected_key = expected_key
        self.hub_key = hub_key
        self._remembered = hub_key is not None  # from an earlier run: the hub may have moved on
        self._filter = payload_filter
        self.phase = Phase.PAIR_START
        self.welcome: Welcome | None = None
        self.pushed = self.rejected = 0
        self.version = -1  # the newest version this worker pushed for
        self.hub_stopped: int | None = None  # the version at which the hub said it stopped
        self.last_reply: Any = None  # the latest reply taken in, decoded (drivers count them)
        self.link = LinkMeter(options.request_timeout_s)
        self.updates = UpdateEncoder()
        self._stopping = self._left = False
        self._pause: str | None = None  # why its person (or the battery) wants it paused
        self._paused_for: str | None = None  # why it is paused, once the hub knows
        self._resumed = False  # it joined again after a pause
        self._started = 0.0
        self._sent_at = 0.0
        self._pairing: PairingRun | None = None
        self._full_since: float | None = None
        self._download: ShardDownload | None = None
        self._graph: GraphDownload | None = None  # while the graph arrives
        self._received: ReceivedGraph | None = None  # from its arrival to the shard's loading
        self._rounds: Rounds | None = None  # from the shard's loading to the next join
        self._error: BaseException | None = None

    # ----------------------------------------------------------------- state
    @property
    def token(self) -> str | None:
        """The membership token while joined (the heartbeat's), else None."""
        return self.welcome.token if self.welcome is not None else None

    def ping(self) -> list[Frame] | None:
        """A heartbeat's frames (any thread may ask), or None before joining."""
        token = self.token
        return None if token is None else encode(Ping(token=token))

    # ----------------------------------------------------------------- inputs
    def start(self, now: float) -> list[Effect]:
        """The first effects: pair, or join at once with a remembered hub key (or end at
        once, when told to stop before it began)."""
        self._started = now
        return self._finish(now) if self._stopping else self._join(now)

    def replied(self, frames: Sequence[Frame], now: float) -> list[Effect]:
        """The reply to the request of the last ``Send``."""
        self._expect(*EXPECTED)
        try:
            msg, body = decode(frames, max_frame_bytes=MAX_REPLY_FRAME)
            self.last_reply = msg
            return self._on_reply(msg, body, now)
        except ComputeShareError as exc:
            return self._end(now, exc)

    def key_refused(self, now: float) -> list[Effect]:
        """The hub refused this machine's key at the handshake (as a NOT_PAIRED reply)."""
        self._expect(*EXPECTED)
        refusal = Reject(code=RejectCode.NOT_PAIRED.value,
                         detail="the hub does not allow this machine's key", version=-1,
                         retry_after=0.0)
        try:
            return self._on_reject(refusal, now)
        except ComputeShareError as exc:
            return self._end(now, exc)

    def prepared(self, now: float, cached: CachedShard | None = None) -> list[Effect]:
        """The compute can run the session's model: download the shard (what ``cached``,
        the driver's shard cache, does not hold, when it has one)."""
        self._expect(Phase.PREPARE)
        assert self.welcome is not None
        self._download = ShardDownload(self.welcome, cached)
        return self._next_chunk(now)

    def kept(self, now: float) -> list[Effect]:
        """The shard cache holds the chunk of the last ``Keep``."""
        self._expect(Phase.KEEP)
        return self._next_chunk(now)

    def loaded(self, numel: int, device: torch.device, now: float) -> list[Effect]:
        """The compute holds the shard; its weights have ``numel`` values on ``device``."""
        self._expect(Phase.LOAD)
        w, graph = self.welcome, self._received
        assert w is not None
        self._download = self._received = None
        self.link.sharing = w.num_shards
        stats = graph.manifest.stats_numel() if graph is not None else 0
        self._rounds = Rounds(numel, device, self.updates, self._filter, stats_numel=stats)
        received = ModelReceived(
            name=w.model, parameters=numel, ops=graph.manifest.op_count if graph else 0,
            how=_how(graph))
        log.info("model %s: %s parameters to train, %s", received.name,
                 f"{received.parameters:,}", received.how + (
                     f" ({received.ops} ops)" if received.ops else ""))
        return [Emit(received), *self._pull(now)]

    def computed(self, update: Update, now: float) -> list[Effect]:
        """The round's update (from the last ``Work``)."""
        self._expect(Phase.WORK)
        assert self._rounds is not None
        rest = self._rounds.finish(update, self.opts.max_rate)
        if rest > 0:
            self.phase = Phase.REST
            return [WaitUntil(now + rest)]
        return self._push(now)

    def woke(self, now: float) -> list[Effect]:
        """A ``WaitUntil`` is over (or was cut short by a stop)."""
        self._expect(Phase.PAIR_WAIT, Phase.FULL_WAIT, Phase.REST, Phase.PAUSED)
        if self.phase is Phase.REST:  # a rest never holds back the work it follows
            return self._push(now)
        if self.phase is Phase.PAUSED:
            return self._still_paused(now)
        if self._stopping:
            return self._end(now, HubUnreachableError("stopped while waiting for the hub"))
        return self._pair(now) if self.phase is Phase.PAIR_WAIT else self._join(now)

    def failed(self, error: BaseException, now: float) -> list[Effect]:
        """The driver could not carry out the last action (the hub stayed silent, a stop
        abandoned a request, the compute raised): end with ``error``."""
        self._expect(*(p for p in Phase if p not in (Phase.BYE, Phase.ENDED)))
        return self._end(now, error)

    def said_goodbye(self, now: float) -> list[Effect]:
        """The ``Goodbye`` went out (or could not)."""
        self._expect(Phase.BYE)
        return self._finish(now)

    def stop(self) -> None:
        """End at the next point the protocol can: before the next pull, or at once in a
        wait. Requests under way are the driver's to abandon."""
        self._stopping = True

    def leave(self) -> None:
        """The user leaves: as ``stop``, and the end says so."""
        self._left = True
        self.stop()

    def want_pause(self, reason: str | None) -> None:
        """Be paused for ``reason`` (a PauseReason value), or train (None): the driver
        says so before each input; a pause starts before the next pull."""
        self._pause = reason

    def stopped_by_hub(self, version: int) -> None:
        """The hub said (elsewhere: a heartbeat, its event feed) that it stopped."""
        if self.hub_stopped is None:
            self.hub_stopped = version
        self.stop()

    # ----------------------------------------------------------------- replies
    def _on_reply(self, msg: Any, body: list[Frame], now: float) -> list[Effect]:
        if isinstance(msg, Reject):
            return self._on_reject(msg, now)
        if isinstance(msg, Done) and self.phase in ENDS_ON_DONE:
            return self._end(now)
        if not isinstance(msg, EXPECTED[self.phase]):
            raise RejectedError(RejectCode.MALFORMED, f"unexpected reply {type(msg).__name__}")
        match msg:
            case PairReply():
                return self._pairing_reply(msg, now)
            case Paired():
                return self._paired(msg, now)
            case Welcome():
                return self._joined(msg, now)
            case GraphData():
                return self._graph_range(msg, body, now)
            case ShardData():
                return self._chunk(msg, body, now)
            case Waiting():
                return self._pull(now)
            case Model():
                return self._model_arrived(msg, body, now)
            case Ack() if self.phase is Phase.PAUSE:
                return self._paused(now)
            case Ack():
                assert self._rounds is not None
                self.link.observe(len(self._rounds.payload), now - self._sent_at)
                self.pushed += 1
                return self._pushed(True, now)
        raise AssertionError(f"EXPECTED lets {type(msg).__name__} through unhandled")

    def _on_reject(self, reply: Reject, now: float) -> list[Effect]:
        try:
            code = RejectCode(reply.code)
        except ValueError:
            code = RejectCode.MALFORMED
        if code is RejectCode.UNKNOWN_WORKER and self.phase is Phase.PAUSE:
            return self._paused(now)  # the hub had forgotten it: paused all the same
        if code is RejectCode.UNKNOWN_WORKER:
            return self._rejoin(now)
        if code is RejectCode.HUB_STOPPED:
            self.stopped_by_hub(reply.version)
            return self._end(now, HubUnreachableError("the hub stopped the session"))
        if self.phase in PAIRING:
            if code in (RejectCode.LOCKED_OUT, RejectCode.BUSY):
                return self._pairing_paused(code, reply.retry_after, now)
            if code is RejectCode.UNKNOWN_CHALLENGE:  # the run expired: start a fresh one
                return self._pair(now)
        if self.phase is Phase.PUSH and code is RejectCode.DUPLICATE:
            self.pushed += 1  # our earlier try arrived; its reply was lost
            return self._pushed(True, now)
        if self.phase is Phase.PUSH and code in REFUSED_PUSH:
            self.rejected += 1
            assert self._rounds is not None and self._rounds.model is not None
            log.info("push for version %d refused: %s", self._rounds.model.version, code.value)
            return self._pushed(False, now)
        if code in (RejectCode.BANNED, RejectCode.BLOCKED):  # removed: the end, here
            raise RemovedError(code, reply.detail or MEANINGS[code])
        error = RejectedError(code, reply.detail or MEANINGS[code])
        if self.phase is Phase.JOIN and code is RejectCode.SESSION_DONE and self._resumed:
            return self._end(now)  # the session ended while this worker was paused
        if self.phase is Phase.JOIN and code is RejectCode.SESSION_FULL:
            return self._session_full(error, now)
        if self.phase is Phase.JOIN and code is RejectCode.NOT_PAIRED and self._remembered:
            return self._pair_again(now)
        raise error

    # ----------------------------------------------------------------- pairing
    def _pair(self, now: float) -> list[Effect]:
        """A fresh SPAKE2 run: prove the PIN, swap long-term keys, pin the hub's key."""
        self._pairing = PairingRun(self.opts.pin, self.opts.name, self.worker_key)
        self.phase = Phase.PAIR_START
        return [self._send(self._pairing.start(), now)]

    def _pairing_reply(self, reply: PairReply, now: float) -> list[Effect]:
        assert self._pairing is not None
        finish = self._pairing.finish(reply)
        self.phase = Phase.PAIR_FINISH
        return [self._send(finish, now)]

    def _paired(self, paired: Paired, now: float) -> list[Effect]:
        assert self._pairing is not None
        fingerprint = self._pairing.verify(paired, self.expected_key)
        self.hub_key, self._pairing = paired.hub_key, None
        log.info("paired with session %s (hub key %s)", paired.session_id, fingerprint)
        return [Emit(PairedWith(session_id=paired.session_id, hub_key=fingerprint)),
                *self._join(now)]

    def _pairing_paused(self, code: RejectCode, retry_after: float,
                        now: float) -> list[Effect]:
        """Locked out or busy: wait as the hub asks (within bounds), then a fresh run."""
        wait = pause_for(retry_after)
        log.warning("%s; retrying in %.0f s", MEANINGS[code], wait)
        self.phase = Phase.PAIR_WAIT
        return [Emit(PairingWait(code=code.value, retry_after=wait)), WaitUntil(now + wait)]

    def _pair_again(self, now: float) -> list[Effect]:
        """The remembered hub key is no longer allowed (a new session): use the PIN."""
        self._remembered = False
        if not self.opts.pin:
            raise RejectedError(RejectCode.NOT_PAIRED, "the hub no longer knows this machine: "
                                                       "join again with the session's PIN")
        log.info("the hub no longer allows this machine's key: pairing with the PIN")
        self.hub_key = None
        return self._pair(now)

    # ----------------------------------------------------------------- joining
    def _join(self, now: float) -> list[Effect]:
        if self.hub_key is None:
            return self._pair(now)
        self.phase = Phase.JOIN
        return [self._send(Join(name=self.opts.name, device=self.device,
                                torch=torch_release()), now)]

    def _session_full(self, error: RejectedError, now: float) -> list[Effect]:
        """A full session may free a shard (a worker died): ask again, within give_up_s."""
        if self._full_since is None:
            self._full_since = now
        if now - self._full_since > self.opts.give_up_s:
            raise error
        log.warning("the session is full; waiting for a shard to free up")
        self.phase = Phase.FULL_WAIT
        return [Emit(SessionFull()), WaitUntil(now + FULL_RETRY_S)]

    def _joined(self, w: Welcome, now: float) -> list[Effect]:
        check_shard(w)
        Recipe.of(w)  # an impossible recipe is refused before the shard is downloaded
        self.welcome = w
        log.info("joined session %s as worker %d on shard %d of %d", w.session_id,
                 w.worker_id, w.shard, w.num_shards)
        joined = Emit(Joined(worker_id=w.worker_id, shard=w.shard, num_shards=w.num_shards,
                             dataset=w.dataset, model=w.model, rounds=w.rounds,
                             device=self.device, batch_size=w.batch_size, state=w.state,
                             updates=w.updates, aggregation=w.aggregation))
        if w.compute == "graph":
            require_release(w.torch)  # the hub checks it too; the format is not stable
            self._graph = GraphDownload(w)
            return [joined, *self._next_graph_range(now)]
        return [joined, self._prepare(None)]

    def _prepare(self, graph: ReceivedGraph | None) -> Prepare:
        assert self.welcome is not None
        self._received = graph
        self.phase = Phase.PREPARE
        return Prepare(self.welcome, graph)

    # ----------------------------------------------------------------- the graph
    def _next_graph_range(self, now: float) -> list[Effect]:
        download = self._graph
        assert download is not None
        ask = download.request()
        if ask is None:
            self._graph = None
            return [self._prepare(download.result())]
        self.phase = Phase.GRAPH
        return [self._send(ask, now, reply_bytes=GRAPH_CHUNK)]

    def _graph_range(self, msg: GraphData, body: list[Frame], now: float) -> list[Effect]:
        assert self._graph is not None
        self.link.observe(sum(len(f) for f in body), now - self._sent_at)
        self._graph.take(msg, body)
        return self._next_graph_range(now)

    def _rejoin(self, now: float) -> list[Effect]:
        log.warning("the hub no longer knows this worker: joining again")
        effects: list[Effect] = [Emit(Rejoining())]
        return effects + (self._end(now) if self._stopping else self._join(now))

    # ----------------------------------------------------------------- the shard
    def _next_chunk(self, now: float) -> list[Effect]:
        download, w = self._download, self.welcome
        assert download is not None and w is not None
        fresh = download.take_fresh()
        if fresh is not None:
            self.phase = Phase.KEEP
            return [Keep(fresh)]
        ask = download.request()
        if ask is None:
            self.phase = Phase.LOAD
            return [Load(w) if download.cached is not None else Load(w, *download.tensors())]
        self.phase = Phase.SHARD
        return [self._send(ask, now, reply_bytes=MAX_SHARD_REPLY)]

    def _chunk(self, msg: ShardData, body: list[Frame], now: float) -> list[Effect]:
        assert self._download is not None
        self.link.observe(sum(len(f) for f in body), now - self._sent_at)
        return [Emit(self._download.take(msg, body)), *self._next_chunk(now)]

    # ----------------------------------------------------------------- rounds
    def _pull(self, now: float) -> list[Effect]:
        if self._stopping:
            return self._end(now)
        if self._pause is not None:
            return self._say_pause(now)
        w, rounds = self.welcome, self._rounds
        assert w is not None and rounds is not None
        self.phase = Phase.PULL
        pull = rounds.pull(w.token, self.opts.pull_wait_ms, w.fingerprint)
        return [self._send(pull, now, reply_bytes=4 * rounds.numel,  # at most the whole model
                           wait_s=self.opts.pull_wait_ms / 1000)]

    def _model_arrived(self, msg: Model, body: list[Frame], now: float) -> list[Effect]:
        assert self._rounds is not None
        try:
            task = self._rounds.task(msg, body[0], body[1])
        except Drift as exc:
            log.warning("model copy out of step with the hub (%s): downloading it whole", exc)
            return [Emit(Resync(version=msg.version)), *self._pull(now)]
        self.phase = Phase.WORK
        return [Work(task)]

    def _push(self, now: float) -> list[Effect]:
        w, rounds = self.welcome, self._rounds
        assert w is not None and rounds is not None
        push = rounds.push(w.token, self.link.rate)
        self.phase = Phase.PUSH
        return [self._send(push, now, body=(rounds.payload, rounds.stats_payload))]

    def _pushed(self, accepted: bool, now: float) -> list[Effect]:
        assert self._rounds is not None and self._rounds.model is not None
        self.version = self._rounds.model.version
        return [Emit(self._rounds.settle(accepted, self.pushed, self.rejected)),
                *self._pull(now)]

    # ----------------------------------------------------------------- pausing
    def _say_pause(self, now: float) -> list[Effect]:
        """Between rounds (nothing computed is lost): tell the hub, which frees the shard."""
        assert self.welcome is not None
        self.phase = Phase.PAUSE
        return [self._send(Bye(token=self.welcome.token, paused=True), now)]

    def _paused(self, now: float) -> list[Effect]:
        """The hub knows: no membership (no heartbeat, no goodbye) until the resume."""
        self.welcome, self._rounds = None, None
        self._paused_for = self._pause or "you"
        log.warning("%s: the hub gives this worker's shard to the others",
                    pause_text(self._paused_for))
        self.phase = Phase.PAUSED
        return [Emit(Paused(reason=self._paused_for)), WaitUntil(now + PAUSE_POLL_S)]

    def _still_paused(self, now: float) -> list[Effect]:
        """A look at the pause: go on waiting (saying a new reason), end, or join again
        (the hub knows this machine's key: no PIN)."""
        if self._stopping:
            return self._end(now)
        if self._pause is not None:
            news: list[Effect] = []
            if self._pause != self._paused_for:
                self._paused_for = self._pause
                news.append(Emit(Paused(reason=self._pause)))
            return [*news, WaitUntil(now + PAUSE_POLL_S)]
        # info: the views say it from Resumed, before the Joined that follows (a warning
        # reached the window's log after it)
        log.info("resuming: joining the session again")
        self._paused_for = self._full_since = None
        self._resumed = True
        return [Emit(Resumed()), *self._join(now)]

    # ----------------------------------------------------------------- the end
    def _end(self, now: float, error: BaseException | None = None) -> list[Effect]:
        """Say goodbye when joined (the hub frees the shard at once), then finish. A
        refused graph's goodbye says why (GRAPH_REFUSED), for the hub to log and show."""
        self._error = error
        self._graph = self._received = None
        if self.welcome is not None and self.hub_key is not None and self.hub_stopped is None:
            self.phase = Phase.BYE
            token = self.welcome.token
            farewell: GraphRefusal | Bye = Bye(token=token)
            if isinstance(error, GraphRefused):
                farewell = GraphRefusal(token=token, reason=error.reason[:MAX_STR_CHARS],
                                        where=(error.where or "")[:MAX_STR_CHARS])
                log.warning("refusing the hub's model: %s", error.reason)
            return [Goodbye(Send.of(farewell, BYE_TIMEOUT_S, self.hub_key))]
        return self._finish(now)

    def _finish(self, now: float) -> list[Effect]:
        self.phase = Phase.ENDED
        error = self._error
        if error is not None and not (isinstance(error, HubUnreachableError)
                                      and self.hub_stopped is not None):
            return [Finish(error=error)]
        if self.hub_stopped is not None:
            log.info("the hub stopped the session at version %d", self.hub_stopped)  # an event
            return [Emit(HubStopped(version=self.hub_stopped)), Finish(error=HubStoppedError(
                f"the hub stopped the session at version {self.hub_stopped} "
                f"(its host can resume it; join again then)"))]
        result = WorkerResult(self.pushed, self.rejected, self.version, now - self._started)
        return [Emit(WorkerDone(pushed=self.pushed, rejected=self.rejected,
                                version=self.version, left=self._left)),
                Finish(result=result)]

    # ----------------------------------------------------------------- helpers
    def _send(self, msg: Any, now: float, *, body: tuple[Frame, ...] = (),
              reply_bytes: int = 0, wait_s: float = 0.0) -> Send:
        """A request whose timeout follows the bytes it moves: its upload, and the most
        its reply can carry."""
        self._sent_at = now
        timeout = self.link.timeout_s(sum(len(f) for f in body) + reply_bytes, wait_s)
        return Send.of(msg, timeout, None if self.phase in PAIRING else self.hub_key, body)

    def _expect(self, *phases: Phase) -> None:
        if self.phase not in phases:
            raise LocalProtocolError(RejectCode.MALFORMED,
                                     f"the worker core got an input it did not ask for "
                                     f"(phase {self.phase.value})")


def _how(graph: ReceivedGraph | None) -> str:
    """How the worker got its model, for ModelReceived."""
    if graph is None:
        return "built-in"
    return "graph checked" if graph.manifest.code is None else code_how(graph.manifest)
