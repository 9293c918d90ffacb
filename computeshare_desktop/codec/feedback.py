"""Error feedback: what a lossy encoding drops is added to the next vector it encodes.

The sender keeps a residual ``r``. To send ``x`` it encodes ``x + r`` and keeps as the new
residual ``x + r - decode(encoding)``, exactly what the receiver did not get. Summed over
rounds, the receiver gets everything the sender meant to send, minus one bounded residual
(Seide et al. 2014; Karimireddy et al. 2019). The new residual is only proposed: the caller
keeps it once the receiver accepted the payload, so a refused push drops that round's
vector as a whole instead of half of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import Codec


@dataclass(frozen=True, slots=True)
class Encoded:
    """One encoding: its payload and the residual after it (what the receiver lacks)."""

    payload: bytes
    residual: torch.Tensor | None  # None for a lossless codec


class ErrorFeedback:
    """Encodes vectors of one size with ``codec``, carrying the residual between calls."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.residual: torch.Tensor | None = None

    def encode(self, flat: torch.Tensor) -> Encoded:
        """Encode ``flat`` plus the carried residual; the state changes only on ``keep``."""
        flat = flat.detach().reshape(-1).to("cpu", torch.float32)
        target = flat if self.residual is None else flat + self.residual
        if not self.codec.needs_error_feedback:  # sends everything, an earlier residual too
            return Encoded(self.codec.encode(target), None)
        return Encoded(*self.codec.encode_residual(target))

    def keep(self, encoded: Encoded) -> None:
        """The receiver accepted ``encoded``: carry its residual into the next call."""
        self.residual = encoded.residual

    def reset(self) -> None:
        """Forget the residual (a new session, or a different model)."""
        self.residual = None
