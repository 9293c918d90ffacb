"""What a worker pushes: the round's update through its codec, with what must carry over.

Two kinds of state carry from round to round, and both only once the hub accepted a push
(a refused push drops that round's update as a whole, never half of it):

* the error-feedback residual of a lossy codec (``codec.feedback``);
* the velocity, when the hub asks the worker to keep the momentum (top-k pushes). For a
  gradient this is Deep Gradient Compression's momentum correction (Lin et al. 2018): the
  velocity is what gets sparsified, and every value that went out restarts from zero
  (momentum factor masking). With local steps the velocity simply carries on between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..codec import Codec, Encoded, ErrorFeedback, make_codec
from ..protocol.messages import Model
from .compute import Update


@dataclass
class Pending:
    """An encoded update waiting for the hub's answer."""

    update: Update
    codec: Codec
    payload: bytes
    encoded: Encoded
    velocity: torch.Tensor | None
    owner: UpdateEncoder

    def commit(self) -> None:
        """The hub accepted it: carry its residual and velocity into the next round."""
        self.owner._feedback.keep(self.encoded)
        self.owner.velocity = self.velocity


class UpdateEncoder:
    """Error feedback and the worker-side velocity of one worker."""

    def __init__(self) -> None:
        self._feedback = ErrorFeedback(make_codec("raw"))
        self.velocity: torch.Tensor | None = None

    def velocity_for(self, msg: Model, numel: int,
                     device: torch.device) -> torch.Tensor | None:
        """A copy of the velocity to work with this round (None: the hub keeps momentum).

        Gradients are sparsified on the CPU; local steps run on the worker's device.
        """
        if not msg.momentum:
            return None
        where = device if msg.steps else torch.device("cpu")
        if self.velocity is None:
            return torch.zeros(numel, device=where)
        return self.velocity.to(where, copy=True)

    def encode(self, msg: Model, update: Update, velocity: torch.Tensor | None) -> Pending:
        """The payload of this round's push; its state is kept only on ``commit``."""
        codec = make_codec(msg.push_codec, topk=msg.topk)
        self._feedback.codec = codec  # the residual carries over if the hub changes codec
        flat = update.flat
        if velocity is not None and msg.steps == 0:
            flat = velocity.mul_(msg.momentum).add_(flat)
        encoded = self._feedback.encode(flat)
        if velocity is not None and msg.steps == 0 and codec.sparse:
            velocity[codec.indices(encoded.payload)] = 0
        return Pending(update, codec, encoded.payload, encoded, velocity, self)
