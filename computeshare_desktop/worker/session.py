"""The worker's protocol loop: pair, fetch the shard, then pull / compute / push until done.

Sockets stay outside: the session talks through a ``Channel`` (request -> reply frames,
``TimeoutError`` on silence) made by a factory, so the loop runs the same over ZeroMQ, in
tests, or over any future transport. A hub that forgot us (it restarted) is joined again
with the same PIN; whether a silent hub is retried or given up on is ``HubWatch``'s call
(see liveness.py), as is the heartbeat.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Sequence

import torch

from ..data import dataset_info
from ..errors import HubStoppedError, HubUnreachableError, RejectedError
from ..models import build_model, fingerprint
from ..errors import RemoteProtocolError
from ..events import (Event, HubStopped, Joined, PairedWith, PairingWait, Pushed, Rejoining,
                      Resync, SessionFull, ShardReceived, WorkerDone)
from ..protocol import MEANINGS, RejectCode, decode, encode
from ..protocol.messages import (Ack, Bye, Done, Join, Model, Paired, PairFinish, PairReply,
                                 PairStart, Pull, Push, Reject, Shard, ShardData, Waiting,
                                 Welcome)
from ..protocol.pake import WorkerPairing, key_fingerprint
from ..protocol.tensors import frame_to_tensor
from ..protocol.wire import Frame
from .compute import GradientComputer
from .device import DeviceChoice
from .link import LinkMeter
from .liveness import EventSink, HubWatch
from .replica import Drift, Replica
from .options import Channel, Connector, WorkerOptions, WorkerResult
from .updates import Pending, UpdateEncoder

log = logging.getLogger(__name__)

SHARD_CHUNK = 4096  # images per SHARD request; the hub caps it further by bytes
MAX_SHARD_REPLY = 4 * 1024 * 1024  # bytes of one SHARD_DATA chunk at most (hub's cap)
MAX_REPLY_FRAME = 256 * 1024 * 1024


class _Rejoin(Exception):
    """The hub no longer knows us: pair again."""


class _RetryPairing(Exception):
    """Pairing is paused (lock-out) or busy: we waited, now start a fresh run."""


class WorkerSession:
    """One worker: pairs with the hub and trains until the hub says it is done."""

    def __init__(self, connector: Connector, options: WorkerOptions, device: DeviceChoice,
                 on_event: EventSink | None = None, *, expected_key: str | None = None,
                 hub_key: str | None = None) -> None:
        """``expected_key``: the hub key fingerprint a discovery advert announced, if any;
        ``hub_key``: the hub's public key from an earlier pairing (then no PIN is needed)."""
        self.connector = connector
        self.expected_key = expected_key
        self.hub_key = hub_key
        self._remembered = hub_key is not None  # from an earlier run: the hub may have moved on
        self.channel: Channel | None = connector.channel(hub_key) if hub_key else None
        self.opts = options
        self.device = device
        self.sinks: list[EventSink] = [on_event] if on_event else []
        self.stop = threading.Event()
        self._left = False  # leave() was called
        self.welcome: Welcome | None = None
        self.pushed = self.rejected = 0
        self.version = -1
        self._full_since: float | None = None
        self._computer: GradientComputer | None = None
        self.watch = HubWatch(connector, options, self.stop, self._emit, self.hub_said_stopped)
        self.hub_stopped: int | None = None  # the version at which the hub said it stopped
        self.link = LinkMeter(options.request_timeout_s)
        self.updates = UpdateEncoder()

    # ----------------------------------------------------------------- public
    def run(self) -> WorkerResult:
        """Train until the session ends; raises RejectedError or HubUnreachableError."""
        started = time.monotonic()
        try:
            while not self.stop.is_set():
                try:
                    self._join()
                    self._load_shard()
                    if self._train():
                        break
                except _Rejoin:
                    log.warning("the hub no longer knows this worker: joining again")
                    self._emit(Rejoining())
        except (InterruptedError, HubUnreachableError):
            if self.hub_stopped is None:
                raise
        finally:
            self._leave()
        if self.hub_stopped is not None:
            log.warning("the hub stopped the session at version %d", self.hub_stopped)
            self._emit(HubStopped(self.hub_stopped))
            raise HubStoppedError(f"the hub stopped the session at version {self.hub_stopped} "
                                  f"(its host can resume it; join again then)")
        self._emit(WorkerDone(self.pushed, self.rejected, self.version, left=self._left))
        return WorkerResult(self.pushed, self.rejected, self.version, time.monotonic() - started)

    # ----------------------------------------------------------------- phases
    def _pair(self) -> None:
        """Prove the PIN with SPAKE2 and swap long-term keys; pins the hub's key."""
        channel = self.connector.pairing()
        try:
            while True:
                run = WorkerPairing(self.opts.pin)
                try:
                    reply = self._call(PairStart(run.msg_a, self.opts.name), PairReply, channel)
                    proof = run.finish(reply.pair_id, reply.msg_b, self.connector.public_key,
                                       self.opts.name)
                    paired = self._call(PairFinish(reply.pair_id, self.connector.public_key,
                                                   proof), Paired, channel)
                except _RetryPairing:
                    continue
                except RejectedError as exc:
                    if exc.code is RejectCode.UNKNOWN_CHALLENGE:  # the run expired
                        continue
                    raise
                break
            try:
                run.verify_hub(paired.hub_key, paired.session_id, paired.proof)
            except RemoteProtocolError as exc:
                raise RejectedError(RejectCode.BAD_PIN, exc.detail) from None
        finally:
            channel.close()
        if self.expected_key and key_fingerprint(paired.hub_key) != self.expected_key:
            raise RejectedError(RejectCode.MALFORMED,
                                "the hub's key does not match the advertised session")
        self.hub_key = paired.hub_key
        self.channel = self.connector.channel(paired.hub_key)
        log.info("paired with session %s (hub key %s)", paired.session_id,
                 key_fingerprint(paired.hub_key))
        self._emit(PairedWith(paired.session_id, key_fingerprint(paired.hub_key)))

    def _join(self) -> None:
        if self.hub_key is None:
            self._pair()
        while True:
            try:
                welcome = self._call(Join(self.opts.name, self.device.description), Welcome)
            except RejectedError as exc:
                if exc.code is RejectCode.SESSION_FULL and self._wait_for_shard():
                    continue
                if exc.code is RejectCode.NOT_PAIRED and self._remembered:
                    self._pair_again()
                    continue
                raise
            self.welcome = welcome
            log.info("joined session %s as worker %d on shard %d of %d", welcome.session_id,
                     welcome.worker_id, welcome.shard, welcome.num_shards)
            self._emit(Joined(welcome.worker_id, welcome.shard, welcome.num_shards,
                              welcome.dataset, welcome.model, welcome.rounds,
                              self.device.description, welcome.batch_size, welcome.state))
            self.watch.start(self.hub_key, lambda: self.welcome.token if self.welcome else None)
            return

    def _pair_again(self) -> None:
        """The remembered hub key is no longer allowed (a new session): use the PIN."""
        self._remembered = False
        if not self.opts.pin:
            raise RejectedError(RejectCode.NOT_PAIRED, "the hub no longer knows this machine: "
                                                       "join again with the session's PIN")
        log.info("the hub no longer allows this machine's key: pairing with the PIN")
        if self.channel is not None:
            self.channel.close()
        self.channel, self.hub_key = None, None
        self._pair()

    def _wait_for_shard(self) -> bool:
        """A full session may free a shard (a worker died): wait, within give_up_s."""
        now = time.monotonic()
        self._full_since = self._full_since or now
        if now - self._full_since > self.opts.give_up_s:
            return False
        log.warning("the session is full; waiting for a shard to free up")
        self._emit(SessionFull())
        return not self.stop.wait(2.0)

    def _load_shard(self) -> None:
        w = self.welcome
        assert w is not None
        info = dataset_info(w.dataset)
        model = build_model(w.model, info)
        if fingerprint(model) != w.fingerprint:
            raise RejectedError(RejectCode.ARCH_MISMATCH,
                                "this machine builds a different model: update ComputeShare")
        images: list[torch.Tensor] = []
        labels: list[torch.Tensor] = []
        while sum(len(x) for x in labels) < w.shard_size:
            offset = sum(len(x) for x in labels)
            began = time.monotonic()
            msg, body = self._call_frames(Shard(w.token, offset, SHARD_CHUNK), ShardData)
            self.link.observe(sum(len(f) for f in body), time.monotonic() - began)
            n = msg.image_shape[0] if msg.image_shape else 0
            if msg.offset != offset or n == 0 or len(msg.image_shape) != 4:
                raise RejectedError(RejectCode.MALFORMED, "unexpected shard chunk from hub")
            cap = 4 * 1024 * 1024 * 16
            images.append(frame_to_tensor(body[0], "uint8", msg.image_shape, cap))
            labels.append(frame_to_tensor(body[1], "int64", [n], cap))
            self._emit(ShardReceived(offset + n, w.shard_size))
        self._computer = GradientComputer(
            model, info, self.device.device, torch.cat(images), torch.cat(labels),
            shard=w.shard, seed=w.seed)

    def _train(self) -> bool:
        """Pull, compute, push; True when the session is over."""
        w, computer = self.welcome, self._computer
        assert w is not None and computer is not None
        self.link.sharing = w.num_shards
        replica = Replica(computer.numel)
        while not self.stop.is_set():
            pull = Pull(w.token, replica.version, self.opts.pull_wait_ms, w.fingerprint)
            msg, body = self._call_frames(pull, (Model, Waiting))
            if isinstance(msg, Done):
                return True
            if isinstance(msg, Waiting):
                continue
            try:
                replica.apply(msg, body[0])
            except Drift as exc:
                log.warning("model copy out of step with the hub (%s): downloading it whole",
                            exc)
                self._emit(Resync(msg.version))
                continue
            assert replica.weights is not None
            pending = self._work(computer, replica.weights, msg)
            update = pending.update
            seconds = update.seconds + self._throttle(update.samples, update.seconds)
            push = Push(w.token, msg.version, pending.codec.id.value, update.flat.numel(),
                        update.loss, update.samples, msg.steps, seconds * 1000,
                        self.link.rate)
            accepted = self._push(push, self.encode_gradient(pending.codec, pending.payload,
                                                             msg.version))
            if accepted:
                pending.commit()
            if accepted is None:
                return True
            self.version = msg.version
            self._emit(Pushed(msg.version, msg.steps, update.loss, seconds, update.samples,
                              accepted, self.pushed, self.rejected))
        return True

    def _work(self, computer: GradientComputer, weights: torch.Tensor, msg: Model) -> Pending:
        """The round's work as the hub planned it (one gradient, or local steps), encoded."""
        if msg.batch < 1 or msg.steps < 0 or not (msg.lr >= 0 and 0 <= msg.momentum < 1):
            raise RejectedError(RejectCode.MALFORMED, "the hub planned impossible work")
        velocity = self.updates.velocity_for(msg, computer.numel, computer.device)
        if msg.steps == 0:
            update = computer.gradient(weights, msg.start, msg.batch)
        else:
            update = computer.local_steps(weights, msg.start, msg.batch, msg.steps, msg.lr,
                                          momentum=msg.momentum, velocity=velocity)
        return self.updates.encode(msg, update, velocity)

    def _throttle(self, samples: int, seconds: float) -> float:
        """With ``max_rate``, rest until the work took samples / max_rate seconds; the
        rest is returned and counts as compute time, so the hub sizes this worker's share
        to its pace."""
        if self.opts.max_rate <= 0:
            return 0.0
        rest = samples / self.opts.max_rate - seconds
        if rest <= 0:
            return 0.0
        self.stop.wait(rest)
        return rest

    def encode_gradient(self, codec: Any, payload: bytes, version: int) -> bytes:
        """The payload of a push as it goes on the wire (a seam for fault-injection tests)."""
        return payload

    def _push(self, push: Push, payload: bytes) -> bool | None:
        """Send a gradient; True if applied, False if refused, None when the session is over."""
        began = time.monotonic()
        try:
            reply, _ = self._call_frames(push, Ack, frames=[payload])
        except RejectedError as exc:
            if exc.code is RejectCode.DUPLICATE:  # our earlier try arrived; its reply was lost
                self.pushed += 1
                return True
            if exc.code in (RejectCode.STALE, RejectCode.NOT_TRAINING, RejectCode.NOT_FINITE,
                            RejectCode.BAD_VERSION):
                self.rejected += 1
                log.info("push for version %d refused: %s", push.version, exc.code.value)
                return False
            raise
        if isinstance(reply, Done):
            return None
        self.link.observe(len(payload), time.monotonic() - began)
        self.pushed += 1
        return True

    def _leave(self) -> None:
        self.stop.set()
        self.watch.join(timeout_s=5)
        if self.channel is None:
            return
        if self.welcome is not None and self.watch.last_answer is not None and \
                self.hub_stopped is None:
            try:  # tell the hub our shard is free; it will notice anyway if this is lost
                self.channel.request(encode(Bye(self.welcome.token)), timeout_s=1.0)
            except (TimeoutError, OSError):
                pass
        self.channel.close()

    # ----------------------------------------------------------------- plumbing
    def _call(self, msg: Any, expect: type, channel: Channel | None = None) -> Any:
        return self._call_frames(msg, expect, channel=channel)[0]

    def _call_frames(self, msg: Any, expect: type | tuple[type, ...],
                     frames: Sequence[Frame] = (), channel: Channel | None = None,
                     ) -> tuple[Any, list[Frame]]:
        """One request with Lazy Pirate retries; rejects become exceptions.

        Its timeout follows the bytes it moves: the upload, and for a pull the model it
        brings back (its whole size, the most a reply can carry).
        """
        nbytes = sum(len(f) for f in frames)
        wait_s = 0.0
        if isinstance(msg, Pull):
            wait_s = msg.wait_ms / 1000
            nbytes += 4 * self._computer.numel if self._computer is not None else 0
        elif isinstance(msg, Shard):
            nbytes += MAX_SHARD_REPLY
        timeout = self.link.timeout_s(nbytes, wait_s)
        channel = channel or self.channel
        assert channel is not None
        reply, body = decode(self.watch.request(channel, encode(msg, frames), timeout),
                             max_frame_bytes=MAX_REPLY_FRAME)
        if isinstance(reply, Reject):
            self._on_reject(reply)
        if isinstance(reply, Done) and not isinstance(msg, (PairStart, PairFinish, Join)):
            return reply, body
        if not isinstance(reply, expect):
            raise RejectedError(RejectCode.MALFORMED, f"unexpected reply {type(reply).__name__}")
        return reply, body

    def _on_reject(self, reply: Reject) -> None:
        try:
            code = RejectCode(reply.code)
        except ValueError:
            code = RejectCode.MALFORMED
        if code is RejectCode.UNKNOWN_WORKER:
            raise _Rejoin()
        if code is RejectCode.HUB_STOPPED:
            self.hub_said_stopped(reply.version)
            raise HubUnreachableError("the hub stopped the session")
        if code in (RejectCode.LOCKED_OUT, RejectCode.BUSY):
            wait = min(max(reply.retry_after, 0.5), 60.0)
            log.warning("%s; retrying in %.0f s", MEANINGS[code], wait)
            self._emit(PairingWait(code.value, wait))
            self.watch.check_give_up()
            if self.stop.wait(wait):  # without this check a stopped worker re-asks at once
                raise HubUnreachableError("stopped while waiting for the hub")
            raise _RetryPairing()
        raise RejectedError(code, reply.detail or MEANINGS[code])

    def hub_said_stopped(self, version: int) -> None:
        """The hub is stopping: end now (the main loop's request is abandoned)."""
        if self.hub_stopped is None:
            self.hub_stopped = version
        self.stop.set()

    def leave(self) -> None:
        """The user leaves the session: end now (the hub is told, the shard freed)."""
        self._left = True
        self.stop.set()

    def _emit(self, event: Event) -> None:
        for sink in self.sinks:
            sink(event)
