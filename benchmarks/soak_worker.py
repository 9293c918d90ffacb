"""Lightweight simulated workers for the soak benchmark: the real protocol, no training.

A ``SimWorker`` is one thread that speaks the hub's wire protocol over real ZeroMQ with the
package's own messages, SPAKE2 pairing and codecs: a plain REQ socket pairs with the PIN,
then two CURVE REQ sockets (requests, heartbeats) join, download the shard, and pull and
push until the worker is told to leave. Instead of computing, it pushes one fixed random
gradient of the model's size (N(0, 1e-3), encoded once per codec), its sign alternating
with the version: the hub decodes, averages and steps for real, and the weights oscillate
instead of drifting, so they stay finite however long the soak runs.

The soak's churn tells a worker how to go (``Leave``): say goodbye, rejoin at once with
the same key, vanish without a word (the hub reaps it), or stall (keep heart-beating,
stop working: the hub's watchdog frees its shard).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from enum import Enum
from typing import Any, Sequence

import torch
import zmq

from computeshare_desktop.codec import make_codec
from computeshare_desktop.protocol import RejectCode, decode, encode
from computeshare_desktop.protocol.messages import (Ack, Bye, Done, Join, Model, Paired,
                                                    PairFinish, PairReply, PairStart, Ping,
                                                    Pong, Pull, Push, Reject, Shard, ShardData,
                                                    Waiting, Welcome)
from computeshare_desktop.protocol.pake import WorkerPairing
from computeshare_desktop.transport import Identity

PULL_WAIT_MS = 2000  # as a real worker's long-poll
SHARD_CHUNK = 4096
RETRIES = 5  # a request that times out is sent again this many times (Lazy Pirate)
STALL_LIMIT_S = 90.0  # a stalled worker the hub never frees is an error after this long
# Refusals a worker meets in a churning session; any other one is an error of the soak.
EXPECTED = {RejectCode.STALE, RejectCode.DUPLICATE, RejectCode.NOT_TRAINING,
            RejectCode.SESSION_FULL, RejectCode.UNKNOWN_WORKER}


class Leave(str, Enum):
    """How the churn makes a worker go."""

    BYE = "bye"  # say goodbye; a newcomer with a fresh key pairs in its place
    REJOIN = "rejoin"  # say goodbye, then join again at once with the same key (no PIN)
    VANISH = "vanish"  # close the sockets mid-request without a word: the hub must reap it
    STALL = "stall"  # keep heart-beating but stop pulling: the watchdog must free its shard


class Phase(str, Enum):
    """Where a worker is."""

    PAIRING = "pairing"  # running SPAKE2 with the PIN
    JOINING = "joining"  # asking for a shard (the session may be full for a while)
    TRAINING = "training"  # has had a push accepted since it last joined
    LEAVING = "leaving"  # told to leave
    GONE = "gone"  # its thread has ended


class _Gone(Exception):
    """The worker ends now (it vanished, or the hub stopped)."""


class _Refused(Exception):
    def __init__(self, code: RejectCode) -> None:
        super().__init__(code.value)
        self.code = code


class Tally:
    """Counters and errors shared by every worker (thread-safe)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.errors: list[str] = []
        self.version = -1  # the newest model version any worker received
        self._lock = threading.Lock()

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counts[name] += n

    def error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)

    def saw(self, version: int) -> None:
        with self._lock:
            self.version = max(self.version, version)


class SimWorker(threading.Thread):
    """One simulated worker; ``leave`` asks it to go (see ``Leave``)."""

    def __init__(self, ctx: zmq.Context, host: str, port: int, pin: str, name: str,
                 tally: Tally, *, seed: int, source: str, heartbeat_s: float = 1.0,
                 timeout_s: float = 30.0) -> None:
        """``source``: the loopback address (127.x.y.z) its connections come from, its own
        as a machine's on a LAN would be (the hub limits pairing per address)."""
        super().__init__(name=f"soak-{name}", daemon=True)
        self.ctx, self.host, self.port, self.pin = ctx, host, port, pin
        self.source = source
        self.worker_name, self.tally, self.seed = name, tally, seed
        self.heartbeat_s, self.timeout_s = heartbeat_s, timeout_s
        self.identity = Identity.generate()
        self.hub_key: str | None = None
        self.phase = Phase.PAIRING
        self.leaving: Leave | None = None
        self.last_ack = 0.0  # monotonic time of its latest accepted push
        self._main: zmq.Socket | None = None
        self._beat: zmq.Socket | None = None
        self._beat_sent: float | None = None  # when the ping in flight went out
        self._next_beat = 0.0
        self._forgotten = False  # a ping was answered UNKNOWN_WORKER
        self._token: str | None = None
        self._version = -1
        self._grads: dict[tuple[str, int], bytes] = {}
        self._welcome: Any = None
        self._ms_per_sample = 0.02 + 0.01 * (seed % 4)  # what it reports: the planner balances

    def leave(self, how: Leave) -> None:
        """Ask the worker to go (it acts between requests; VANISH at once)."""
        self.leaving = how
        self.phase = Phase.LEAVING
        self.tally.add(f"leave_{how.value}")

    # ----------------------------------------------------------------- life
    def run(self) -> None:
        try:
            self._pair()
            while self._session():
                pass
        except _Gone:
            pass
        except Exception as exc:  # noqa: BLE001 - every failure is a finding of the soak
            self.tally.error(f"{self.worker_name}: {exc!r}")
        finally:
            self._close()
            self.phase = Phase.GONE

    def _session(self) -> bool:
        """Join, fetch the shard, train; True to join again (same key)."""
        try:
            self._join()
            self._fetch_shard()
            return self._train()
        except _Refused as exc:
            if exc.code is RejectCode.UNKNOWN_WORKER and self.leaving is None:
                self.tally.add("forgotten")  # reaped or freed while alive: join again
                return True
            raise

    def _pair(self) -> None:
        sock = self.ctx.socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(self._endpoint(self.port + 2))
        try:
            while True:
                run = WorkerPairing(self.pin)
                reply = self._ask(sock, encode(PairStart(run.msg_a, self.worker_name)))
                if _is(reply, RejectCode.BUSY):  # as a real worker: wait, start afresh
                    self.tally.add("pairing_busy")
                    self._pause(max(0.1, reply.retry_after))
                    continue
                reply = _expect(reply, PairReply)
                proof = run.finish(reply.pair_id, reply.msg_b, self.identity.public,
                                   self.worker_name)
                paired = self._ask(sock, encode(PairFinish(reply.pair_id,
                                                           self.identity.public, proof)))
                if _is(paired, RejectCode.UNKNOWN_CHALLENGE):  # the run was evicted
                    self.tally.add("pairing_evicted")
                    continue
                paired = _expect(paired, Paired)
                run.verify_hub(paired.hub_key, paired.session_id, paired.proof)
                self.hub_key = paired.hub_key
                self.tally.add("paired")
                return
        finally:
            sock.close(0)

    def _ask(self, sock: zmq.Socket, frames: list[Any]) -> Any:
        sock.send_multipart(frames)
        if not self._wait(sock):
            raise TimeoutError("no pairing reply")
        return decode(sock.recv_multipart())[0]

    def _join(self) -> None:
        self.phase = Phase.JOINING if self.leaving is None else self.phase
        while True:
            try:
                welcome = self._call(Join(self.worker_name, "cpu (simulated)"), Welcome)[0]
                break
            except _Refused as exc:
                if exc.code is not RejectCode.SESSION_FULL:
                    raise
                self._pause(1.0)  # a shard frees when the hub reaps a silent worker
        self._token, self._welcome = welcome.token, welcome
        self._forgotten = False
        self.tally.add("joined")

    def _fetch_shard(self) -> None:
        w, have = self._welcome, 0
        while have < w.shard_size:
            msg, body = self._call(Shard(w.token, have, SHARD_CHUNK), ShardData)
            have += msg.image_shape[0]
            self.tally.add("shard_bytes", sum(len(f) for f in body))

    def _train(self) -> bool:
        """Pull and push until told to leave; True to join again."""
        w = self._welcome
        while self.leaving is None:
            msg, body = self._call(Pull(w.token, self._version, PULL_WAIT_MS, w.fingerprint),
                                   (Model, Waiting))
            if isinstance(msg, Done):
                raise _Gone()
            if isinstance(msg, Model):
                self._push(msg)
        return self._go(self.leaving)

    def _push(self, model: Model) -> None:
        self._version = model.version
        self.tally.saw(model.version)
        self.tally.add("models")
        samples = model.batch * max(1, model.steps)
        push = Push(self._welcome.token, model.version, model.push_codec, model.numel, 0.5,
                    samples, model.steps, samples * self._ms_per_sample, 0.0)
        try:
            self._call(push, Ack, [self._gradient(model)])
        except _Refused as exc:
            if exc.code not in (RejectCode.STALE, RejectCode.DUPLICATE,
                                RejectCode.NOT_TRAINING):
                raise
            return
        self.tally.add("pushed")
        self.last_ack = time.monotonic()
        if self.leaving is None:
            self.phase = Phase.TRAINING

    def _gradient(self, model: Model) -> bytes:
        sign = 1 if model.version % 2 == 0 else -1
        key = (model.push_codec, sign)
        if key not in self._grads:
            grad = torch.randn(model.numel, generator=torch.Generator().manual_seed(self.seed))
            self._grads[key] = make_codec(model.push_codec, topk=model.topk).encode(
                sign * 1e-3 * grad)
        return self._grads[key]

    def _go(self, how: Leave) -> bool:
        if how is Leave.VANISH:
            raise _Gone()
        if how is Leave.STALL:
            self._stall()
            return False
        self._call(Bye(self._welcome.token), Ack)
        if how is Leave.REJOIN:  # a restarted worker: new connections, the remembered key
            self._close()
            self.leaving, self._version, self._token = None, -1, None
            return True
        return False

    def _stall(self) -> None:
        """Heartbeats only, until the hub says it no longer knows this worker."""
        until = time.monotonic() + STALL_LIMIT_S
        while not self._forgotten:
            if time.monotonic() > until:
                raise RuntimeError("stalled worker never freed by the hub's watchdog")
            self._pause(0.2)
        self.tally.add("stall_freed")

    # ----------------------------------------------------------------- requests
    def _call(self, msg: Any, expect: type | tuple[type, ...],
              frames: Sequence[bytes] = ()) -> tuple[Any, list[Any]]:
        """One request, re-sent after a timeout; a refusal raises _Refused."""
        for _ in range(RETRIES + 1):
            try:
                reply, body = decode(self._request(encode(msg, frames)))
            except TimeoutError:
                self.tally.add("timeouts")
                continue
            if isinstance(reply, Reject):
                return self._refused(reply)
            if isinstance(reply, Done):
                return reply, body
            return _expect(reply, expect), body
        raise TimeoutError(f"{type(msg).__name__}: no reply after {RETRIES + 1} tries")

    def _refused(self, reply: Reject) -> Any:
        code = RejectCode(reply.code)
        if code is RejectCode.HUB_STOPPED:
            raise _Gone()
        self.tally.add(f"reject_{code.value}")
        if code not in EXPECTED:
            raise RuntimeError(f"unexpected refusal {code.value}: {reply.detail}")
        raise _Refused(code)

    def _request(self, frames: list[Any]) -> list[bytes]:
        """Send on the request socket and wait, heart-beating meanwhile."""
        sock = self._main_socket()
        sock.send_multipart(frames, copy=False)
        if self._wait(sock):
            return sock.recv_multipart()
        self._reset_main()
        raise TimeoutError()

    def _wait(self, sock: zmq.Socket) -> bool:
        """True when a reply is ready within timeout_s; heart-beats meanwhile, and gives up
        at once when told to vanish."""
        deadline = time.monotonic() + self.timeout_s
        while (now := time.monotonic()) < deadline:
            if self.leaving is Leave.VANISH:
                raise _Gone()
            self._heartbeat(now)
            wait = min(deadline, self._next_beat, now + 0.25) - now
            if sock.poll(max(1, int(wait * 1000))):
                return True
        return False

    def _pause(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while (now := time.monotonic()) < until:
            if self.leaving is Leave.VANISH:
                raise _Gone()
            self._heartbeat(now)
            time.sleep(min(0.05, until - now))

    def _heartbeat(self, now: float) -> None:
        """Collect the pong in flight; send a ping when one is due (after joining)."""
        if self._token is None:
            return
        beat = self._beat_socket()
        if self._beat_sent is not None:
            if beat.poll(0):
                reply = decode(beat.recv_multipart())[0]
                self._beat_sent = None
                if isinstance(reply, Pong):
                    self.tally.add("pongs")
                elif isinstance(reply, Reject) and reply.code == RejectCode.HUB_STOPPED.value:
                    raise _Gone()
                elif isinstance(reply, Reject) and reply.code == RejectCode.UNKNOWN_WORKER.value:
                    self._forgotten = True
            elif now - self._beat_sent > self.timeout_s:
                self.tally.add("ping_timeouts")
                self._close_beat()
            return
        if now >= self._next_beat:
            beat.send_multipart(encode(Ping(self._token)))
            self._beat_sent, self._next_beat = now, now + self.heartbeat_s

    def _curve(self) -> zmq.Socket:
        assert self.hub_key is not None
        sock = self.ctx.socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, 0)
        sock.curve_serverkey = self.hub_key.encode()
        sock.curve_publickey = self.identity.public.encode()
        sock.curve_secretkey = self.identity.secret.encode()
        sock.connect(self._endpoint(self.port))
        return sock

    def _endpoint(self, port: int) -> str:
        return f"tcp://{self.source}:0;{self.host}:{port}"

    def _main_socket(self) -> zmq.Socket:
        if self._main is None:
            self._main = self._curve()
        return self._main

    def _beat_socket(self) -> zmq.Socket:
        if self._beat is None:
            self._beat = self._curve()
        return self._beat

    def _reset_main(self) -> None:
        if self._main is not None:
            self._main.close(0)
            self._main = None

    def _close_beat(self) -> None:
        if self._beat is not None:
            self._beat.close(0)
            self._beat, self._beat_sent = None, None

    def _close(self) -> None:
        self._reset_main()
        self._close_beat()


def _expect(reply: Any, expect: type | tuple[type, ...]) -> Any:
    if not isinstance(reply, expect):
        what = f"{reply.code}: {reply.detail}" if isinstance(reply, Reject) else ""
        raise RuntimeError(f"unexpected reply {type(reply).__name__} {what}")
    return reply


def _is(reply: Any, code: RejectCode) -> bool:
    return isinstance(reply, Reject) and reply.code == code.value
