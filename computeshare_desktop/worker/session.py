"""A worker session: pair, fetch the shard, then pull / compute / push until done.

A thin facade over the two halves of a worker: ``WorkerCore`` (core.py), the protocol, pure,
and ``WorkerDriver`` (driver.py), which carries out its effects over a ``Connector``'s
channels with the retry, heartbeat and give-up policies, and runs the compute that a
``ComputeFactory`` builds (by default the registry's models, or the hub's checked graph).
Sockets stay outside: the connector makes the channels, so a session runs the same over
ZeroMQ, in tests, or over any future transport.
"""

from __future__ import annotations

import threading
from typing import Any

from ..events import Event
from ..join_options import parse_size
from .approvals import CodeApprovals
from .code import CodeFactory, WithCode
from .compute import Compute, ComputeFactory, ModelFactory
from .core import WorkerCore
from ..devices import DeviceChoice
from .driver import EventSink, WorkerDriver
from .options import Channel, Connector, WorkerOptions, WorkerResult
from .pause import PauseReason, PauseSwitch
from .shard_cache import ShardCache, shard_cache_dir


class WorkerSession:
    """One worker: pairs with the hub and trains until the hub says it is done."""

    def __init__(self, connector: Connector, options: WorkerOptions, device: DeviceChoice,
                 on_event: EventSink | None = None, *, expected_key: str | None = None,
                 hub_key: str | None = None, factory: ComputeFactory | None = None,
                 approvals: CodeApprovals | None = None, trust_code: str = "",
                 pauses: PauseSwitch | None = None) -> None:
        """``expected_key``: the hub key fingerprint a discovery advert announced, if any;
        ``hub_key``: the hub's public key from an earlier pairing (then no PIN is needed);
        ``factory``: builds the compute (default: the registry's models, or the
        hub's checked graph, on ``device``, or code the hub offers if ``approvals`` has it
        for this hub, or if it is ``trust_code``, a sha256 then approved and remembered);
        ``pauses``: shared with whoever pauses it (the window's button, the battery watch)."""
        self.opts = options
        self.device = device
        self.sinks: list[EventSink] = [on_event] if on_event else []
        self.stop = threading.Event()  # set it to end (as leave() does, without saying so)
        self.pauses = pauses if pauses is not None else PauseSwitch()
        self.core = WorkerCore(options, device=device.description,
                               worker_key=connector.public_key, expected_key=expected_key,
                               hub_key=hub_key, payload_filter=self.encode_gradient)
        if factory is None:
            code = CodeFactory(device.device, approvals or CodeApprovals(None),
                               lambda: self.core.hub_key, trust=trust_code)
            factory = WithCode(ModelFactory(device.device), code)
        cap = parse_size(options.cache_size)
        self.driver = WorkerDriver(self.core, connector, factory, options, self._emit,
                                   stop=self.stop, pauses=self.pauses,
                                   cache=ShardCache(shard_cache_dir(), cap) if cap else None)

    def run(self) -> WorkerResult:
        """Train until the session ends; raises RejectedError, HubUnreachableError or
        HubStoppedError."""
        return self.driver.run()

    def pair(self) -> None:
        """Pair with the PIN and stop there (the hub's key is then ``hub_key``)."""
        self.driver.pair()

    def leave(self) -> None:
        """The user leaves the session: end now (the hub is told, the shard freed)."""
        self.driver.leave()

    def hub_said_stopped(self, version: int) -> None:
        """The hub is stopping: end now (the request under way is abandoned)."""
        self.driver.hub_said_stopped(version)

    def pause(self, reason: PauseReason = PauseReason.YOU) -> None:
        """Pause at the end of the round under way: the hub gives the shard to others."""
        self.pauses.pause(reason)

    def resume(self) -> None:
        """Join again (without the PIN) and train on."""
        self.pauses.resume()

    def encode_gradient(self, codec: Any, payload: bytes, version: int) -> bytes:
        """The payload of a push as it goes on the wire (a seam for fault-injection tests)."""
        return payload

    @property
    def hub_key(self) -> str | None:
        """The hub's public key, once paired (or as remembered)."""
        return self.core.hub_key

    @property
    def channel(self) -> Channel | None:
        """The encrypted channel to the hub, once paired: its byte counts are what a
        worker's window shows as sent / received (JoinService.traffic)."""
        return self.driver.channel

    @property
    def compute(self) -> Compute | None:
        """What the worker computes with, once its shard is loaded."""
        return self.driver.compute

    def _emit(self, event: Event) -> None:
        for sink in self.sinks:
            sink(event)
