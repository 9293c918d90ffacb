"""A joined worker's rounds, for the core: the copy of the model, the work the hub planned,
and the push that answers it. Pure: the caller passes what it measured.

A round goes MODEL -> ``task`` (the work, checked) -> the driver computes -> ``finish``
(encoded, with the rest ``max_rate`` asks for) -> ``push`` -> ``settle`` with the hub's
answer. What carries over between rounds (error feedback, the worker-side velocity) is kept
only when the hub accepts a push (see updates.py).
"""

from __future__ import annotations

from typing import Callable

import torch

from ..codec import Codec
from ..errors import RejectedError
from ..events import Pushed
from ..protocol import RejectCode
from ..protocol.graphs import stats_frame, stats_from_frame
from ..protocol.messages import Model, Pull, Push
from ..protocol.wire import Frame
from .compute import Update
from .effects import Task
from .replica import Replica
from .updates import Pending, UpdateEncoder

PayloadFilter = Callable[[Codec, bytes, int], bytes]


class Rounds:
    """The model copy and the round in progress of one membership (a rejoin starts anew);
    the encoder's state outlives it."""

    def __init__(self, numel: int, device: torch.device, updates: UpdateEncoder,
                 payload_filter: PayloadFilter | None = None, *, stats_numel: int = 0) -> None:
        """``stats_numel``: values of the running statistics that travel with each model
        and push (a graph's; 0 for a built-in)."""
        self.numel = numel
        self.stats_numel = stats_numel
        self.device = device
        self.replica = Replica(numel)
        self.updates = updates
        self._filter = payload_filter
        self.model: Model | None = None  # the round being worked on
        self._velocity: torch.Tensor | None = None
        self._pending: Pending | None = None
        self.rest = 0.0  # seconds of rest after the work (max_rate)
        self.payload = b""  # what the push carries
        self.stats_payload = b""  # and the change of the running statistics (raw)

    def pull(self, token: str, wait_ms: int, fingerprint: str) -> Pull:
        """The long-poll for the version after ours."""
        return Pull(token=token, after=self.replica.version, wait_ms=wait_ms,
                    fingerprint=fingerprint)

    def task(self, msg: Model, payload: Frame, stats: Frame = b"") -> Task:
        """Take ``msg``'s version, its running statistics and its work; Drift when the copy
        is not the hub's, RejectedError when the work is impossible."""
        hub_stats = stats_from_frame(stats, self.stats_numel)
        self.replica.apply(msg, payload)
        if msg.batch < 1 or msg.steps < 0 or not (msg.lr >= 0 and 0 <= msg.momentum < 1):
            raise RejectedError(RejectCode.MALFORMED, "the hub planned impossible work")
        assert self.replica.weights is not None
        self.model = msg
        self._velocity = self.updates.velocity_for(msg, self.numel, self.device)
        return Task(weights=self.replica.weights, start=msg.start, batch=msg.batch,
                    steps=msg.steps, lr=msg.lr, momentum=msg.momentum, velocity=self._velocity,
                    stats=hub_stats)

    def finish(self, update: Update, max_rate: float) -> float:
        """Encode the work's update; the seconds to rest before pushing it: with
        ``max_rate``, until it took samples / max_rate seconds. The rest counts as compute
        time, so the hub sizes this worker's share to its pace."""
        assert self.model is not None
        self._pending = self.updates.encode(self.model, update, self._velocity)
        self.stats_payload = stats_frame(update.stats)
        self.rest = 0.0
        if max_rate > 0:
            self.rest = max(0.0, update.samples / max_rate - update.seconds)
        return self.rest

    def push(self, token: str, bandwidth: float) -> Push:
        """The push of the finished round (its payload is ``self.payload``)."""
        pending, model = self._pending, self.model
        assert pending is not None and model is not None
        update = pending.update
        self.payload = pending.payload
        if self._filter is not None:
            self.payload = self._filter(pending.codec, pending.payload, model.version)
        return Push(token=token, version=model.version, codec=pending.codec.id.value,
                    numel=update.flat.numel(), loss=update.loss, samples=update.samples,
                    steps=model.steps, compute_ms=(update.seconds + self.rest) * 1000,
                    bandwidth=bandwidth)

    def settle(self, accepted: bool, pushed: int, rejected: int) -> Pushed:
        """The hub answered the push (``accepted``: it took it, so its state carries on)."""
        pending, model = self._pending, self.model
        assert pending is not None and model is not None
        if accepted:
            pending.commit()
        update = pending.update
        return Pushed(version=model.version, steps=model.steps, loss=update.loss,
                      compute_s=update.seconds + self.rest, samples=update.samples,
                      accepted=accepted, pushed=pushed, rejected=rejected)
