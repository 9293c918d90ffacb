"""The worker's copy of the published model: whole snapshots, deltas, and the drift check."""

from __future__ import annotations

import torch

from ..codec import get_codec
from ..codec.delta import FULL, apply_delta, weights_check
from ..errors import RejectedError
from ..protocol import RejectCode
from ..protocol.messages import Model
from ..protocol.wire import Frame


class Drift(Exception):
    """The copy does not match the hub's fingerprint (or the delta's base): resync."""


class Replica:
    """The weights of one version, bitwise equal to what the hub published for it."""

    def __init__(self, numel: int) -> None:
        self.numel = numel
        self.weights: torch.Tensor | None = None
        self.version = -1  # -1: nothing yet, so the hub sends the whole model

    def apply(self, msg: Model, payload: Frame) -> None:
        """Take ``msg``'s version; raises Drift when the result is not the hub's."""
        if msg.numel != self.numel:
            raise RejectedError(RejectCode.BAD_SHAPE,
                                f"hub sent {msg.numel} values for a model of {self.numel}")
        codec = get_codec(msg.codec)
        if msg.base == FULL:
            weights = codec.decode(payload, self.numel)
        elif self.weights is not None and msg.base == self.version:
            weights = apply_delta(codec, self.weights, payload)
        else:
            self.reset()
            raise Drift(f"a delta from version {msg.base}, but this copy is {self.version}")
        if weights_check(weights) != msg.check:
            self.reset()
            raise Drift(f"weights of version {msg.version} do not match the hub's")
        self.weights, self.version = weights, msg.version

    def reset(self) -> None:
        """Forget the copy: the next download is the whole model."""
        self.weights, self.version = None, -1
