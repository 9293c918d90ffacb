"""Top-k sparsification: only the k largest values by magnitude travel.

Payload: k little-endian uint32 indices in strictly increasing order, then their k float32
values. k follows from the payload size; the decoder checks it against ``numel`` before
allocating, and rejects an index out of range, repeated or out of order (BAD_INDEX) and a
value that is not finite (NOT_FINITE). Everything not sent is zero on arrival: error
feedback on the sending side keeps it for later rounds, so nothing is lost, only delayed.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..errors import ConfigError, RemoteProtocolError
from ..protocol.codes import RejectCode
from .base import Codec, CodecId, check_numel

DEFAULT_FRACTION = 0.01
ENTRY_BYTES = 8  # uint32 index + float32 value


def check_fraction(fraction: float) -> float:
    """A top-k fraction in (0, 1], or ConfigError."""
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise ConfigError(f"the top-k fraction must be in (0, 1], got {fraction!r}")
    return float(fraction)


class TopKCodec(Codec):
    """Keeps ``ceil(fraction * numel)`` values (at least one)."""

    id = CodecId.TOPK
    lossless = False

    def __init__(self, fraction: float = DEFAULT_FRACTION) -> None:
        self.fraction = check_fraction(fraction)

    def k(self, numel: int) -> int:
        """How many values an encoding of ``numel`` values keeps."""
        return min(numel, max(1, math.ceil(self.fraction * numel)))

    def encode(self, flat: torch.Tensor) -> bytes:
        values = flat.detach().reshape(-1).to("cpu", torch.float32)
        k = self.k(values.numel())
        if k == 0:
            return b""
        idx = torch.topk(values.abs(), k, sorted=False).indices.sort().values
        return (idx.numpy().astype("<u4").tobytes()
                + values[idx].numpy().astype("<f4", copy=False).tobytes())

    def decode(self, data: bytes | memoryview, numel: int) -> torch.Tensor:
        numel = check_numel(numel)
        if len(data) % ENTRY_BYTES:
            raise RemoteProtocolError(RejectCode.BAD_SHAPE,
                                      f"{len(data)} bytes is not a whole number of entries")
        k = len(data) // ENTRY_BYTES
        if k > numel:
            raise RemoteProtocolError(RejectCode.TOO_LARGE, f"{k} entries for {numel} values")
        idx = np.frombuffer(data, dtype="<u4", count=k)
        vals = np.frombuffer(data, dtype="<f4", count=k, offset=4 * k)
        if k > 1 and not (np.diff(idx.astype(np.int64)) > 0).all():
            raise RemoteProtocolError(RejectCode.BAD_INDEX,
                                      "indices repeated or not in increasing order")
        if k and int(idx[-1]) >= numel:  # increasing, so the last is the largest
            raise RemoteProtocolError(RejectCode.BAD_INDEX, "index out of range")
        if not np.isfinite(vals).all():
            raise RemoteProtocolError(RejectCode.NOT_FINITE, "a value is not finite")
        out = torch.zeros(numel, dtype=torch.float32)
        out[torch.from_numpy(idx.astype(np.int64))] = torch.from_numpy(vals.astype(np.float32))
        return out

    def max_encoded_bytes(self, numel: int) -> int:
        return ENTRY_BYTES * numel
