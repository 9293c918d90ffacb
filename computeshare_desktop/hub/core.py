"""The hub's protocol core: frames in, replies and events out. No sockets, no clock.

The transport hands every request to ``handle(peer, frames, now)`` and calls ``tick(now)``
often; both return the replies to send. Long-polls (PULL) are parked here and answered when
a new version is published or their wait runs out, which is why replies can come out of
``tick`` and out of other peers' requests.

A model shipped as a graph (``graph``) is served in parts after the Welcome (GRAPH_GET, by
byte ranges); such a session admits only workers on the hub's torch release, and a worker
that refuses the graph says why (GRAPH_REFUSED), which is logged and reported in the hub's
words (``describe``: the layer, why, the way out). When every machine that came refused the
model and none is left, the host is told (hub/refusals.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..codec import CODECS, get_codec
from ..data import ArrayDataset
from ..data.info import wire_shape
from ..errors import RemoteProtocolError
from ..events import (Event, LeaveReason, ModelRefused, PairingRefused, Rejected,
                      StateChanged, WorkerJoined, WorkerLeft, WorkerReady)
from ..graph import GraphRefused, release, torch_release
from ..protocol import (MEANINGS, TO_HUB, TO_PAIRING, RejectCode, SessionState, auth, decode,
                       encode)
from ..protocol.messages import (PROBES, Ack, Bye, Done, GraphData, GraphGet, GraphRefusal, Join,
                                 Model, Ping, Pong, Probe, Pull, Push, Reject, Shard, Waiting,
                                 Welcome)
from ..protocol.wire import Frame
from .config import HubConfig
from .allowlist import Allowlist
from .asynchronous import AsyncSchedule
from .augment import session_augment
from .membership import Member, Membership
from .pairing import PairingDesk
from .probe import PROBE_MAX_BYTES, ProbeDesk
from .refusals import REFUSED_GRACE_S, RefusalWatch
from .rejects import RejectLog
from .rounds import Round, Task
from .schedule import Schedule
from .shards import ShardServer
from .traffic import Traffic
from .trainer import ParameterServer
from .user_model import ShippedGraph

log = logging.getLogger(__name__)

MAX_GRAPH_CHUNK_BYTES = 4 * 1024 * 1024  # of one GRAPH_DATA reply
MAX_PAIRING_FRAME = 1024


@dataclass(frozen=True, slots=True)
class Reply:
    """Frames to send to one peer."""

    peer: bytes
    frames: list[Frame]


@dataclass(slots=True)
class _Parked:
    token: str
    after: int
    expires: float


class HubCore:
    """Pairing, membership, shards, long-polls and pushes; the rounds are its Schedule."""

    def __init__(self, config: HubConfig, *, pin: str, session_id: str, hub_key: str,
                 train_set: ArrayDataset, server: ParameterServer, fingerprint: str,
                 allowlist: Allowlist | None = None,
                 cursors: dict[int, int] | None = None,
                 held: dict[str, int] | None = None,
                 graph: ShippedGraph | None = None,
                 describe: Callable[[str, str], str] | None = None) -> None:
        """``fingerprint``: what workers must match (the graph's for a ``graph``, which
        workers then fetch; None: a built-in they build by name); ``cursors`` and ``held``:
        each shard's stream position and the shard each worker held, from a checkpoint;
        ``describe``: a worker's refusal (its reason, the graph node it names) in words for
        the host (SessionModel.refusal; None: the worker's reason as it is)."""
        self.config = config
        self.graph = graph
        self._describe = describe or (lambda reason, where: reason)
        self.refusals = RefusalWatch(REFUSED_GRACE_S)
        self.session_id = session_id
        self.server = server
        self.fingerprint = fingerprint
        self.train_set = train_set
        self.allowlist = allowlist if allowlist is not None else Allowlist()
        self.pairing = PairingDesk(pin, session_id, hub_key, self.allowlist)
        self.probes = ProbeDesk(hub_key, session_id, server.numel)  # the doctor's checks
        self.members = Membership(config.workers, config.heartbeat_timeout_s, held)
        self.state = SessionState.DONE if server.version >= config.rounds else SessionState.WAITING
        schedule = AsyncSchedule if config.asynchronous else Schedule
        self.schedule = schedule(config, server, cursors, epoch_steps=len(train_set) // max(
            1, config.batch_size * config.workers))
        # A push may use any codec (decoding is strict whichever it is), within its bound.
        self.max_frame = max(get_codec(c).max_encoded_bytes(server.numel) for c in CODECS)
        self._parked: dict[bytes, _Parked] = {}
        self.shards = ShardServer(train_set, config.workers, config.seed)
        self._events: list[Event] = []
        self._told: set[int] = set()  # workers that have been told the session is done
        self._reject_log = RejectLog()
        self.traffic = Traffic()  # bytes by purpose: data, model, update
        self.stopped = False  # stop() was called: every request is told to leave
        # what workers do to their batches (ConfigError, before the session opens: a table)
        self.augment = session_augment(config.augment, config.dataset, train_set.info)

    # ----------------------------------------------------------------- entry points
    def handle(self, peer: bytes, frames: Sequence[Frame], now: float,
               peer_key: str | None) -> list[Reply]:
        """Process one request from the encrypted socket; return every reply it releases.

        ``peer_key`` is the sender's CURVE public key as the transport authenticated it;
        only keys on the allowlist get past this point (a kicked key is refused at once,
        even on a connection that was open before the kick).
        """
        if peer_key is not None and peer_key not in self.allowlist \
                and self.probes.allows(peer_key, now):
            return [self._probe(peer, frames, now, peer_key)]
        nbytes = sum(len(f) for f in frames)
        self.round.received(nbytes)
        self.traffic.came(nbytes)
        out: list[Reply] = []
        try:
            refused = None if peer_key is None else self.allowlist.refusal(peer_key)
            if refused is not None:  # removed or blocked: told each time
                raise RemoteProtocolError(refused, MEANINGS[refused])
            if peer_key is None or peer_key not in self.allowlist:
                raise RemoteProtocolError(RejectCode.NOT_PAIRED, "pair with the PIN first")
            msg, body = decode(frames, max_frame_bytes=self.max_frame, expect=TO_HUB)
            self.traffic.count(msg, nbytes)
            reply = self._dispatch(peer, peer_key, msg, body, now, out)
        except RemoteProtocolError as exc:
            reply = self._reject(exc, peer, now)
        if reply is not None:
            out.insert(0, self._reply(peer, *reply))
        return out

    def handle_pairing(self, peer: bytes, frames: Sequence[Frame], now: float,
                       source: str | None = None) -> list[Reply]:
        """Process one request from the (unencrypted) pairing socket; ``source`` is the
        sender's IP address when the transport knows it (limits are per source)."""
        try:
            msg, _ = decode(frames, max_frame_bytes=MAX_PAIRING_FRAME,
                            expect=TO_PAIRING | PROBES)
            if isinstance(msg, Probe):  # a network check asks to probe (hub/probe.py)
                return [Reply(peer, encode(self.probes.grant(msg, now, source), [b""]))]
            self.refusals.came(now)  # someone pairs: after refusals, the wait goes on
            reply: tuple[Any, ...] = (self.pairing.handle(msg, now, source),)
        except RemoteProtocolError as exc:
            lockout = self.pairing.lockout_for(source)
            locked_for = lockout.retry_after(now)
            reply = self._reject(exc, peer, now, locked_for)
            if exc.code is RejectCode.LOCKED_OUT or exc.code is RejectCode.BAD_PIN:
                self._event(PairingRefused(exc.code.value, lockout.failures, locked_for))
        return [Reply(peer, encode(*reply))]

    def _probe(self, peer: bytes, frames: Sequence[Frame], now: float, key: str) -> Reply:
        """A probing key's request: PROBE only, counted in no round (hub/probe.py)."""
        try:
            msg, body = decode(frames, max_frame_bytes=PROBE_MAX_BYTES, expect=PROBES)
            reply, data = self.probes.serve(key, msg, body, now)
            return Reply(peer, encode(reply, [data]))
        except RemoteProtocolError as exc:
            return Reply(peer, encode(*self._reject(exc, peer, now)))

    def kick(self, worker_id: int, block: bool = False) -> bool:
        """Remove a worker and refuse its key for the session (other workers on that key
        go too): it can neither send nor pair again, even with the PIN, until the host
        allows it again; with ``block``, in this hub's later sessions too."""
        member = next((m for m in self.members.members() if m.worker_id == worker_id), None)
        if member is None:
            return False
        self.allowlist.ban(member.key, block)
        for other in self.members.members():
            if other.key == member.key:
                self.members.remove(other.token, "kicked")
                self._forget(other)
                self._event(WorkerLeft(other.info(), LeaveReason.KICKED))
        return True

    def allow_again(self, key: str) -> bool:
        """Lift a removal or a block (see Allowlist.allow_again); True if ``key`` was
        refused."""
        machine = self.allowlist.allow_again(key)
        if machine is not None:
            log.info("%s may pair again", machine.name or f"key {key[:8]}...")
        return machine is not None

    def tick(self, now: float) -> list[Reply]:
        """Reap silent workers, close overdue rounds, answer expired long-polls."""
        out: list[Reply] = []
        for member in self.members.reap(now):
            self._forget(member)
            self._event(WorkerLeft(member.info(), LeaveReason.SILENT))
        if self.state is SessionState.TRAINING:
            self._free_stuck(self.schedule.idle(now, self._ready()))
        self._maybe_start(now, out)
        self._maybe_close(now, out)
        self._events += self.refusals.tick(now, len(self.members))
        self._reject_log.flush(now, self.server.version)  # refusals held for the summary
        for peer, parked in list(self._parked.items()):
            if parked.expires <= now:
                del self._parked[peer]
                gone = self.members.get_quiet(parked.token) is None
                reply = (Reject(RejectCode.UNKNOWN_WORKER.value, "join again", -1, 0.0) if gone
                         else Waiting(self.server.version, self.state.value))
                out.append(self._reply(peer, reply))
        return out

    def drain_events(self) -> list[Event]:
        """Events since the last call (round closed, worker joined/left, state changed)."""
        events, self._events = self._events, []
        return events

    def stop(self) -> list[Reply]:
        """The hub is stopping before the end: every parked long-poll is told now, and any
        request from here on gets HUB_STOPPED, so workers leave at once."""
        if self.state is SessionState.DONE or self.stopped:
            return []
        self.stopped = True
        log.info("[hub v%d] stopping: telling the workers", self.server.version)
        self._event(StateChanged(SessionState.STOPPED.value))
        out: list[Reply] = []
        for peer, parked in list(self._parked.items()):
            del self._parked[peer]
            member = self.members.get_quiet(parked.token)
            if member is not None:
                self._told.add(member.worker_id)
            out.append(self._reply(peer, *self._stopped_reply()))
        return out

    def _stopped_reply(self) -> tuple[Any, ...]:
        return (Reject(RejectCode.HUB_STOPPED.value, "the host stopped the session",
                       self.server.version, 0.0),)

    @property
    def done(self) -> bool:
        return self.state is SessionState.DONE

    def all_told(self) -> bool:
        """True when every live worker has been told that the session is done."""
        return all(m.worker_id in self._told for m in self.members.members())

    # ----------------------------------------------------------------- dispatch
    def _dispatch(self, peer: bytes, peer_key: str, msg: Any, body: list[Frame], now: float,
                  out: list[Reply]) -> tuple[Any, ...] | None:
        if isinstance(msg, Join):
            return (self._join(msg, peer_key, now),)
        member = self.members.get(msg.token, now)
        if member is None or member.key != peer_key:  # a token only works with its key
            raise RemoteProtocolError(RejectCode.UNKNOWN_WORKER, "join again")
        if self.stopped and not isinstance(msg, Bye):
            self._told.add(member.worker_id)
            return self._stopped_reply()
        if isinstance(msg, Bye):  # paused: it comes back later (its key pairs it)
            self.members.remove(member.token, "paused" if msg.paused else "said goodbye",
                                "paused" if msg.paused else "left")
            self._forget(member)
            self._event(WorkerLeft(member.info(), LeaveReason.PAUSED if msg.paused
                                         else LeaveReason.LEFT))
            self._maybe_close(now, out)
            return (Ack(self.server.version),)
        if isinstance(msg, GraphRefusal):
            return self._graph_refused(member, msg, now, out)
        if self.done:
            self._told.add(member.worker_id)
            return (Done(self.server.version),)
        if isinstance(msg, Ping):
            return (Pong(self.server.version, self.state.value),)
        if isinstance(msg, Shard):
            return self.shards.reply(member.shard, msg)
        if isinstance(msg, GraphGet):
            return self._graph_part(msg)
        if isinstance(msg, Pull):
            return self._pull(peer, member, msg, now, out)
        return self._push(member, msg, body, now, out)

    def _join(self, msg: Join, peer_key: str, now: float) -> Any:
        if self.stopped:
            raise RemoteProtocolError(RejectCode.HUB_STOPPED, "the host stopped the session")
        if self.done:
            raise RemoteProtocolError(RejectCode.SESSION_DONE, "training has finished")
        self.refusals.came(now)
        if self.graph is not None:
            self._check_torch(msg, peer_key, now)
        token = auth.new_token()
        member = self.members.admit(token, msg.name, msg.device, now, key=peer_key)
        if member is None:
            raise RemoteProtocolError(RejectCode.SESSION_FULL,
                                      f"all {self.config.workers} shards are taken")
        self.refusals.admitted(peer_key)
        self._event(WorkerJoined(member.info(), member.returning))
        c, data = self.config, self.train_set.info
        return Welcome(
            session_id=self.session_id,
            worker_id=member.worker_id, token=token, shard=member.shard,
            num_shards=c.workers, shard_size=self.shards.size(member.shard),
            dataset=data.name, fingerprint=self.fingerprint,
            model=c.model if self.graph is None else self.graph.manifest.model,
            batch_size=c.batch_size, seed=c.seed, rounds=c.rounds, codec=c.codec,
            state=self.state.value, version=self.server.version, optimizer=c.optimizer,
            weight_decay=c.weight_decay, label_smoothing=c.label_smoothing,
            clip_grad=c.clip_grad, precision=c.precision,
            compute="builtin" if self.graph is None else "graph", torch=torch_release(),
            data_hash=self.shards.data_hash,
            num_classes=data.num_classes, **wire_shape(data),
            augment=list(self.augment), updates=c.updates, aggregation=c.aggregation)

    def _check_torch(self, msg: Join, peer_key: str, now: float) -> None:
        """A graph's format changes between torch releases: the worker's must be ours."""
        ours = torch_release()
        try:
            theirs = release(msg.torch)
        except GraphRefused:
            theirs = repr(msg.torch[:40])
        if theirs == ours:
            return
        detail = (f"the hub runs torch {ours} and this worker torch {theirs}: a model shipped "
                  f"as a graph needs the same release on both; install torch {ours} here")
        log.warning("[hub v%d] worker %s refused: %s", self.server.version, msg.name, detail)
        self._refused(peer_key, msg.name, detail, now)
        raise RemoteProtocolError(RejectCode.TORCH_MISMATCH, detail)

    def _graph_part(self, msg: GraphGet) -> tuple[Any, ...]:
        """A byte range of one part of the graph (each reply at most a chunk)."""
        if self.graph is None:
            raise RemoteProtocolError(RejectCode.BAD_RANGE,
                                      "this session's model is a built-in: build it by name")
        data = self.graph.part(msg.part)
        if not 0 <= msg.offset < len(data):
            raise RemoteProtocolError(RejectCode.BAD_RANGE,
                                      f"offset {msg.offset} of {len(data)} bytes")
        return (GraphData(part=msg.part, offset=msg.offset, total=len(data)),
                memoryview(data)[msg.offset:msg.offset + MAX_GRAPH_CHUNK_BYTES])

    def _graph_refused(self, member: Member, msg: GraphRefusal, now: float,
                       out: list[Reply]) -> tuple[Any, ...]:
        """The worker refuses the graph and leaves: its shard is free at once."""
        reason = self._describe(msg.reason, msg.where)
        log.warning("[hub v%d] worker %d (%s) refused the model: %s", self.server.version,
                    member.worker_id, member.name, reason)
        self.members.remove(member.token, "refused the model")
        self._forget(member)
        self._event(WorkerLeft(member.info(), LeaveReason.MODEL_REFUSED))
        self._refused(member.key, member.name, reason, now)
        self._maybe_close(now, out)
        return (Ack(self.server.version),)

    def _refused(self, key: str, name: str, reason: str, now: float) -> None:
        """Report a refusal of the model, and whether any worker is left to train it."""
        self._event(ModelRefused(name, reason))
        for event in self.refusals.refusal(key, name, reason, now, len(self.members)):
            log.warning("[hub v%d] every worker that came (%d) refused the model, and none "
                        "is left", self.server.version, len(self.refusals.refused))
            self._event(event)

    def _pull(self, peer: bytes, member: Member, msg: Pull, now: float,
              out: list[Reply]) -> tuple[Any, ...] | None:
        if msg.fingerprint != self.fingerprint:
            self.members.remove(member.token, "different model architecture")
            self._forget(member)
            self._event(WorkerLeft(member.info(), LeaveReason.ARCH_MISMATCH))
            raise RemoteProtocolError(RejectCode.ARCH_MISMATCH,
                                      f"hub model {self.fingerprint}, worker {msg.fingerprint}")
        if not member.ready:
            member.mark_ready(now)
            self._event(WorkerReady(member.info()))
            self._maybe_start(now, out)
        if self.state is SessionState.TRAINING and self.server.version > msg.after:
            return self._model(member, msg.after)
        wait_ms = min(max(msg.wait_ms, 0), self.config.long_poll_ms)
        self._parked[peer] = _Parked(member.token, msg.after, now + wait_ms / 1000)
        return None

    def _model(self, member: Member, have: int) -> tuple[Any, ...]:
        """The current version for a worker holding ``have``, with its work for the round.

        The payload is encoded once per version and shared by every reply (a delta for
        workers one version behind, the whole model for the others), and so are the
        running statistics of a graph (whole, raw).
        """
        payload, stats = self.server.payload(have), self.server.stats_frame()
        self.round.served_model(member.worker_id, len(payload.data) + len(stats))
        task = self._task(member)
        mode = self.server.mode
        return (Model(version=payload.version, codec=payload.codec, numel=self.server.numel,
                      base=payload.base, check=payload.check, start=task.start,
                      batch=task.batch, steps=task.steps, lr=task.lr,
                      momentum=self.server.worker_momentum, push_codec=mode.codec,
                      topk=self.round.topk),
                payload.data, stats)

    def _task(self, member: Member) -> Task:
        return self.schedule.task(member, self.shards.size(member.shard))

    def _push(self, member: Member, msg: Push, body: list[Frame], now: float,
              out: list[Reply]) -> tuple[Any, ...]:
        try:
            self._accept(member, msg, body, now)
        except RemoteProtocolError:
            member.refused()
            self.round.refused()
            raise
        self._maybe_close(now, out)
        return (Ack(self.server.version),)

    def _accept(self, member: Member, msg: Push, body: list[Frame], now: float) -> None:
        if self.state is not SessionState.TRAINING:
            raise RemoteProtocolError(RejectCode.NOT_TRAINING, self.state.value)
        self.schedule.accept(member, msg, body, self.shards.size(member.shard), now)

    # ----------------------------------------------------------------- rounds
    def _ready(self) -> list[Member]:
        return [m for m in self.members.members() if m.ready]

    def _maybe_start(self, now: float, out: list[Reply]) -> None:
        ready = len(self._ready())
        if self.state is SessionState.WAITING and ready >= self.config.workers:
            self.state = SessionState.TRAINING
            self.schedule.open(now, self._ready())
            log.info("[hub v%d] %d workers ready: training starts", self.server.version, ready)
            self._event(StateChanged(self.state.value))
            self._release(out)

    def _maybe_close(self, now: float, out: list[Reply]) -> None:
        if self.state is not SessionState.TRAINING:
            return
        complete = self.schedule.due(now, self._ready())
        if complete is None:
            return
        pushed = set(self.round.contributions)
        self._events += self.traffic.split(
            self.schedule.close(now, complete, self.members.members()))
        self._free_stuck(self.schedule.stuck(pushed, self._ready()))
        self.schedule.open(now, self._ready())
        if self.server.version >= self.config.rounds:
            self.state = SessionState.DONE
            log.info("[hub v%d] all %d rounds done", self.server.version, self.config.rounds)
            self._event(StateChanged(self.state.value))
        self._release(out)

    def _free_stuck(self, stuck: list[Member]) -> None:
        """The watchdog: a worker that is alive but stuck (it missed max_missed deadlines
        in a row, or pushed nothing for that long in async mode) loses its shard, so the
        rounds stop waiting for it and a spare worker can take over."""
        for member in stuck:
            log.warning("[hub v%d] worker %d (%s) missed %d deadlines in a row: its shard "
                        "is freed", self.server.version, member.worker_id, member.name,
                        self.config.max_missed)
            self.members.remove(member.token, "missed deadlines")
            self._forget(member)
            self._event(WorkerLeft(member.info(), LeaveReason.STUCK))

    def _release(self, out: list[Reply]) -> None:
        """Answer every parked long-poll that the new version or state satisfies."""
        for peer, parked in list(self._parked.items()):
            member = self.members.get_quiet(parked.token)
            if self.done:
                reply: tuple[Any, ...] = (Done(self.server.version),)
                if member is not None:
                    self._told.add(member.worker_id)
            elif member is None:
                reply = (Reject(RejectCode.UNKNOWN_WORKER.value, "join again", -1, 0.0),)
            elif self.server.version > parked.after:
                reply = self._model(member, parked.after)
            else:
                continue
            del self._parked[peer]
            out.append(self._reply(peer, *reply))

    # ----------------------------------------------------------------- helpers
    def _forget(self, member: Member) -> None:
        self.schedule.forget(member.worker_id)

    @property
    def round(self) -> Round:
        """The round being collected."""
        return self.schedule.round

    def checkpoint(self) -> dict[str, object]:
        """What a resumed session needs (see Schedule.checkpoint), and the shard each
        worker held (a worker that comes back gets it again, with its cache)."""
        return {**self.schedule.checkpoint(), "held": self.members.held()}

    def _reply(self, peer: bytes, msg: Any, *frames: Frame) -> Reply:
        encoded = encode(msg, frames)
        nbytes = sum(len(f) for f in encoded)
        self.round.sent(nbytes)
        self.traffic.went(nbytes)
        self.traffic.count(msg, nbytes)
        return Reply(peer, encoded)

    def _reject(self, exc: RemoteProtocolError, peer: bytes, now: float,
                locked_for: float = 0.0) -> tuple[Any, ...]:
        code = exc.code if isinstance(exc.code, RejectCode) else RejectCode.MALFORMED
        # a wrong PIN has its own line (hub/pairing.py), paced by the lock-out
        if code not in (RejectCode.STALE, RejectCode.DUPLICATE, RejectCode.BAD_PIN):
            self._reject_log.note(code, peer, exc.detail, now, self.server.version)
        retry = (locked_for if code is RejectCode.LOCKED_OUT
                 else 1.0 if code is RejectCode.BUSY else 0.0)
        self._event(Rejected(code.value, exc.detail))
        return (Reject(code.value, exc.detail[:200], self.server.version, retry),)

    def _event(self, event: Event) -> None:
        self._events.append(event)
