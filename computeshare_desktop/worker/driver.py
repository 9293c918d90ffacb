"""The one driver of a real worker: it carries out a ``WorkerCore``'s effects.

It owns every channel (the pairing channel, the encrypted one, the heartbeat's), every
timeout and retry, and runs the compute on the calling thread. Its policies (liveness.py):
a request that times out is sent again after a back-off (Lazy Pirate) until the hub has
been silent for too long; a heartbeat on its own thread and channel (Paranoid Pirate) says
whether the hub is alive, so a slow transfer is waited for, and reports it lost or back.
A stop (the user leaves, the hub says it stopped) abandons a request under way at once.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
import time
from typing import Callable

import torch

from ..errors import HubUnreachableError, RemoteProtocolError
from ..events import Event, HubSilent, Resumed
from .compute import Compute, ComputeFactory
from .core import WorkerCore
from .effects import (Action, Effect, Emit, Finish, Goodbye, Keep, Load, Prepare, Send,
                      WaitUntil, Work)
from .liveness import (BACKOFF, BEAT_TIMEOUT_S, Liveness, Patience, next_backoff,
                       read_beat)
from ..protocol.messages import Welcome
from .options import Channel, Connector, WorkerOptions, WorkerResult
from .pause import PauseSwitch
from .shard_cache import ShardCache, ShardEntry
from .shard_reuse import CachedShard, Fresh

log = logging.getLogger(__name__)

EventSink = Callable[[Event], None]
BEAT_JOIN_S = 5.0  # how long the end waits for the heartbeat's thread
CLOSED_PROBE_S = 1.0  # how long the check that a silent hub has closed its port may take
CLOSED = ("the hub has closed: its session ended (or its host stopped it) before this "
          "worker could join it")


class WorkerDriver:
    """Runs one core to its end over ``connector``'s channels (``run`` blocks)."""

    def __init__(self, core: WorkerCore, connector: Connector, factory: ComputeFactory,
                 options: WorkerOptions, emit: EventSink, *,
                 stop: threading.Event | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wait: Callable[[float], bool] | None = None,
                 cache: ShardCache | None = None, pauses: PauseSwitch | None = None) -> None:
        """``stop``: set to end (see ``leave``); ``clock`` and ``wait(seconds) -> stopped``
        stand in for the real ones in tests; ``cache``: where the shard's samples are kept
        (None: in memory only); ``pauses``: whether to pause (its person, the battery),
        read before each input to the core."""
        self.core = core
        self.connector = connector
        self.factory = factory
        self.opts = options
        self.emit = emit
        self.stop = stop if stop is not None else threading.Event()
        self.clock = clock
        self.wait = wait if wait is not None else self.stop.wait
        self.watch = Liveness(options)
        self.compute: Compute | None = None
        self.cache = cache
        self.pauses = pauses if pauses is not None else PauseSwitch()
        self._entry: ShardEntry | None = None  # the shard's cache entry, while it loads
        self._spilled: list[Fresh] = []  # chunks the cache's disk refused, held here
        self.channel: Channel | None = None  # the encrypted channel, to _channel_key
        self._channel_key: str | None = None
        self._pairing: Channel | None = None
        self._beat: threading.Thread | None = None
        self._left = False
        self._hub_stopped: int | None = None

    # ----------------------------------------------------------------- any thread
    def leave(self) -> None:
        """The user leaves: end now (the hub is told, the shard freed)."""
        self._left = True
        self.stop.set()

    def hub_said_stopped(self, version: int) -> None:
        """The hub is stopping: end now (a request under way is abandoned)."""
        if self._hub_stopped is None:
            self._hub_stopped = version
        self.stop.set()

    # ----------------------------------------------------------------- the loop
    def run(self) -> WorkerResult:
        """Train until the session ends; raises what the core ends with."""
        result = self._drive(until_paired=False)
        assert result is not None
        return result

    def pair(self) -> None:
        """Run until the hub's key is known (the pairing alone), then close."""
        self._drive(until_paired=True)

    def _drive(self, *, until_paired: bool) -> WorkerResult | None:
        effects = self._input(self.core.start)
        try:
            while True:
                action = self._emit_all(effects)
                if until_paired and self.core.hub_key is not None:
                    return None
                if isinstance(action, Finish):
                    if action.error is not None:
                        raise action.error
                    return action.result
                effects = self._carry_out(action)
        finally:
            self._close()

    def _emit_all(self, effects: list[Effect]) -> Action:
        *events, action = effects
        for effect in events:
            assert isinstance(effect, Emit), effect
            if isinstance(effect.event, Resumed):  # a pause is no silence of the hub's
                self.watch.answered(self.clock())
            self.emit(effect.event)
        assert not isinstance(action, Emit), effects
        beating = self._beat is not None and self._beat.is_alive()
        if not beating and self.core.token and self.core.hub_key and not self.stop.is_set():
            self._start_beat(self.core.hub_key)  # once joined (again, should it have died)
        return action

    def _carry_out(self, action: Action) -> list[Effect]:
        match action:
            case Send():
                return self._request(action)
            case Prepare() | Keep() | Load() | Work():
                return self._compute(action)
            case WaitUntil():
                self.wait(max(0.0, action.at - self.clock()))
                return self._input(self.core.woke)
            case Goodbye():
                return self._goodbye(action.send)
        raise AssertionError(f"no way to carry out {action!r}")

    def _input(self, step: Callable[..., list[Effect]], *args: object) -> list[Effect]:
        """Feed the core one input, after what other threads said (stop, hub stopped)."""
        if self._hub_stopped is not None:
            self.core.stopped_by_hub(self._hub_stopped)
        if self.stop.is_set():
            (self.core.leave if self._left else self.core.stop)()
        reason = self.pauses.reason
        self.core.want_pause(None if reason is None else reason.value)
        return step(*args, self.clock())

    # ----------------------------------------------------------------- actions
    def _request(self, send: Send) -> list[Effect]:
        """One request, sent again after each silence until the hub answers or the
        liveness policy gives up."""
        channel = self._channel_for(send.hub_key)
        backoff = BACKOFF[0]
        while True:
            patient = functools.partial(self._patient, Patience(self.watch))
            try:
                reply = channel.request(send.frames, send.timeout_s, keep_waiting=patient,
                                        abort=self.stop.is_set)
            except InterruptedError:
                return self._input(self.core.failed, _stopped_waiting())
            except PermissionError:
                return self._input(self.core.key_refused)
            except TimeoutError:
                error = self.watch.give_up(self.clock()) or self._hub_closed()
                if error is not None:
                    return self._input(self.core.failed, error)
                log.warning("no answer from the hub; retrying in %.1f s", backoff)
                self.emit(HubSilent(retry_in=backoff))
                if self.wait(backoff):
                    return self._input(self.core.failed, _stopped_waiting())
                backoff = next_backoff(backoff)
                continue
            self.watch.answered(self.clock())
            return self._input(self.core.replied, reply)

    def _patient(self, patience: Patience) -> bool:
        """Whether a request whose timeout ran out is waited for again (liveness.py)."""
        return patience.more(self.clock())

    def _hub_closed(self) -> HubUnreachableError | None:
        """The end of a worker that is not in the session (waiting for a shard, coming
        back, paused) once the hub that answered it closed its port: its session is over,
        nothing to wait give_up_s for. A joined worker keeps trying (a link may come back)."""
        host, port = getattr(self.connector, "host", None), getattr(self.connector, "port", None)
        if self.core.token is not None or self.watch.last_answer is None or \
                not isinstance(host, str) or not isinstance(port, int):
            return None
        try:
            with socket.create_connection((host, port), timeout=CLOSED_PROBE_S):
                return None
        except ConnectionRefusedError:
            log.warning("%s", CLOSED)
            return HubUnreachableError(CLOSED)
        except OSError:  # no answer at all: a link down, not a closed hub
            return None

    def _compute(self, action: Prepare | Keep | Load | Work) -> list[Effect]:
        """Check the model, keep a chunk, build the compute or do a round's work, here and
        now."""
        step: Callable[..., list[Effect]]
        args: tuple[object, ...] = ()
        try:
            match action:
                case Prepare():
                    self.factory.check(action.welcome, action.graph)
                    step = functools.partial(self.core.prepared,
                                             cached=self._recall(action.welcome))
                case Keep():
                    self._keep(action.chunk)
                    step = self.core.kept
                case Load():
                    images, labels = action.images, action.labels
                    if images is None or labels is None:
                        images, labels = self._kept_shard()
                    self._entry = None
                    self.compute = self.factory.build(action.welcome, images, labels)
                    step, args = self.core.loaded, (self.compute.numel, self.compute.device)
                case Work():
                    assert self.compute is not None
                    step, args = self.core.computed, (action.task.run(self.compute),)
        except Exception as exc:  # noqa: BLE001 - the core ends with it, after its goodbye
            return self._input(self.core.failed, exc)
        return self._input(step, *args)

    def _keep(self, chunk: Fresh) -> None:
        """Write ``chunk`` into the shard's cache entry; when the disk refuses (full, gone
        read-only), keep it and every later chunk in memory instead, and train on."""
        assert self._entry is not None
        if not self._spilled:
            try:
                self._entry.write(chunk)
                return
            except OSError as exc:
                log.warning("the shard cache cannot keep more samples (%s): the rest of "
                            "the shard stays in memory", exc)
        self._spilled.append(chunk)

    def _kept_shard(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole shard from the cache entry, with the chunks the disk refused laid
        over a copy in memory."""
        assert self._entry is not None
        images, labels = self._entry.tensors()
        if self._spilled:
            images, labels = images.clone(), labels.clone()
            for chunk in self._spilled:
                end = chunk.offset + len(chunk.labels)
                images[chunk.offset:end] = chunk.images
                labels[chunk.offset:end] = chunk.labels
            self._spilled = []
        return images, labels

    def _recall(self, welcome: Welcome) -> CachedShard | None:
        """What the shard cache holds of ``welcome``'s shard, checked (None: no cache, or
        one that cannot be used: the shard then stays in memory)."""
        self._entry, self._spilled = None, []
        if self.cache is None:
            return None
        try:
            entry = self.cache.entry(welcome)
            cached = entry.open() if entry is not None else None
        except OSError as exc:
            log.warning("the shard cache cannot be used (%s): keeping the shard in memory",
                        exc)
            return None
        self._entry = entry
        if cached is not None and cached.chunks:
            log.info("shard cache: %d of %d samples held", sum(h.count for h in cached.chunks),
                     welcome.shard_size)
        return cached

    def _goodbye(self, send: Send) -> list[Effect]:
        """Tell the hub we leave (its shard is free at once), once, without retrying: it
        notices a silent worker anyway."""
        self.stop.set()
        self._join_beat()
        channel = self._channel_for(send.hub_key)
        try:
            channel.request(send.frames, timeout_s=send.timeout_s)
        except (TimeoutError, OSError):
            pass
        return self._input(self.core.said_goodbye)

    # ----------------------------------------------------------------- channels
    def _channel_for(self, hub_key: str | None) -> Channel:
        """The pairing channel (``hub_key`` None) or the encrypted one to ``hub_key``;
        opening one closes the other (as pairing again replaces the hub's key)."""
        if hub_key is None:
            self._close_hub()
            if self._pairing is None:
                self._pairing = self.connector.pairing()
            return self._pairing
        if self._pairing is not None:
            self._pairing.close()
            self._pairing = None
        if self.channel is None or self._channel_key != hub_key:
            self._close_hub()
            self.channel, self._channel_key = self.connector.channel(hub_key), hub_key
        return self.channel

    def _close_hub(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = self._channel_key = None

    def _close(self) -> None:
        """The end: the heartbeat stops, every channel closes (``channel`` stays readable
        for its byte counts)."""
        self.stop.set()
        self._join_beat()
        if self._pairing is not None:
            self._pairing.close()
            self._pairing = None
        if self.channel is not None and self._channel_key is not None:
            self.channel.close()
            self._channel_key = None

    # ----------------------------------------------------------------- heartbeat
    def _start_beat(self, hub_key: str) -> None:
        self._beat = threading.Thread(  # named after the session's thread (log scopes)
            target=self._heartbeat, args=(hub_key,),
            name=f"{threading.current_thread().name}/heartbeat", daemon=True)
        self._beat.start()

    def _join_beat(self) -> None:
        if self._beat is not None:
            self._beat.join(timeout=BEAT_JOIN_S)

    def _heartbeat(self, hub_key: str) -> None:
        """PING every heartbeat_s on a channel of its own, until the stop."""
        channel = self.connector.channel(hub_key)
        timeout_s = min(BEAT_TIMEOUT_S, self.opts.request_timeout_s)
        try:
            while not self.stop.wait(self.opts.heartbeat_s):
                frames = self.core.ping()
                if frames is None:
                    continue
                try:
                    beat = read_beat(channel.request(frames, timeout_s=timeout_s,
                                                     abort=self.stop.is_set))
                except (TimeoutError, InterruptedError, PermissionError, RemoteProtocolError):
                    events = self.watch.missed(self.clock())
                else:
                    if beat.stopped is not None:
                        self.hub_said_stopped(beat.stopped)
                    events = self.watch.heard(self.clock()) if beat.alive else []
                for event in events:
                    self.emit(event)
        finally:
            channel.close()


def _stopped_waiting() -> HubUnreachableError:
    return HubUnreachableError("stopped while waiting for the hub")
