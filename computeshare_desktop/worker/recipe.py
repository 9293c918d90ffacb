"""What the session's training recipe asks of a worker's compute (the Welcome carries it).

The learning rate and its schedule are the hub's (each MODEL brings the round's rate); what
a worker must know itself is how to compute: the training loss's label smoothing, the
precision of its forward and backward passes, and for local steps the inner optimizer
(plain SGD, or AdamW with its decoupled weight decay) and the norm each step is clipped to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import RejectedError
from ..protocol import RejectCode
from ..protocol.messages import Welcome
from .augment import checked


@dataclass(frozen=True, slots=True)
class Recipe:
    """How a worker computes: see the module's docstring."""

    optimizer: str  # "sgd" or "adamw": the inner optimizer of local steps
    weight_decay: float  # AdamW's (local steps); SGD's decay is applied by the hub
    label_smoothing: float  # of the training loss, in [0, 1)
    clip_grad: float  # local steps: each step's gradient norm is clipped to it; 0: off
    precision: str  # "auto", "fp32", "bf16" or "fp16", resolved for the device
    augment: tuple[str, ...] = ()  # the ops applied to each training batch (augment.py)

    @classmethod
    def of(cls, welcome: Welcome) -> Recipe:
        """The recipe of ``welcome``; RejectedError(MALFORMED) when it is impossible (an
        augmentation this worker does not know, too)."""
        w = welcome
        numbers = (w.weight_decay, w.label_smoothing, w.clip_grad)
        if not (all(math.isfinite(v) and v >= 0 for v in numbers) and w.label_smoothing < 1):
            raise RejectedError(RejectCode.MALFORMED, "the hub sent an impossible recipe")
        return cls(w.optimizer, float(w.weight_decay), float(w.label_smoothing),
                   float(w.clip_grad), w.precision, checked(w.augment))


PLAIN = Recipe(optimizer="sgd", weight_decay=0.0, label_smoothing=0.0, clip_grad=0.0,
               precision="fp32")
"""What a compute built without a session's recipe does (tests, benchmarks): plain SGD
local steps in float32, the plain cross-entropy, no clipping."""
