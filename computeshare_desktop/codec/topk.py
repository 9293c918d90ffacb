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


SAMPLE = 1 << 16  # values sampled to guess the k-th largest magnitude


def top_indices(magnitudes: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the ``k`` largest values (fewer when fewer are not zero), exactly, without
    sorting millions of them.

    A strided sample guesses a threshold a little below the k-th largest magnitude; every
    value at or above it is a candidate, and an exact top-k runs over the candidates only.
    When the guess leaves fewer than k candidates the full top-k runs instead, so the
    result is always the exact top-k (up to ties): about 5x faster on 11 M values. Zeros
    are never kept: an update sparser than k travels whole, and smaller.
    """
    n = magnitudes.numel()
    if n < 4 * SAMPLE or k * 8 > n:
        best = torch.topk(magnitudes, k, sorted=False)
        return best.indices[best.values > 0]
    sample = magnitudes[::n // SAMPLE]
    keep = min(sample.numel(), int(sample.numel() * k / n * 1.25) + 32)
    threshold = torch.topk(sample, keep, sorted=True).values[-1]
    candidates = (magnitudes >= threshold if threshold > 0 else magnitudes > 0)
    candidates = candidates.nonzero().squeeze(1)
    if candidates.numel() < k and threshold > 0:
        best = torch.topk(magnitudes, k, sorted=False)
        return best.indices[best.values > 0]
    if candidates.numel() <= k:
        return candidates
    return candidates[torch.topk(magnitudes[candidates], k, sorted=False).indices]


class TopKCodec(Codec):
    """Keeps the ``ceil(fraction * numel)`` largest values (at least one; never zeros)."""

    id = CodecId.TOPK
    lossless = False
    finite = True
    sparse = True

    def __init__(self, fraction: float = DEFAULT_FRACTION) -> None:
        self.fraction = check_fraction(fraction)
        self.wire_fraction = self.fraction * ENTRY_BYTES / 4  # an (index, value) per value kept

    def configured(self, *, fraction: float) -> TopKCodec:
        return TopKCodec(fraction)

    def k(self, numel: int) -> int:
        """How many values an encoding of ``numel`` values keeps (at most: never zeros)."""
        return min(numel, max(1, math.ceil(self.fraction * numel)))

    def encode(self, flat: torch.Tensor) -> bytes:
        return self.encode_residual(flat)[0]

    def encode_residual(self, flat: torch.Tensor) -> tuple[bytes, torch.Tensor]:
        """The values it keeps travel exactly, so what is left out is the rest, as is."""
        values = flat.detach().reshape(-1).to("cpu", torch.float32)
        k = self.k(values.numel())
        idx = top_indices(values.abs(), k).sort().values
        payload = (idx.numpy().astype("<u4").tobytes()
                   + values[idx].numpy().astype("<f4", copy=False).tobytes())
        residual = values.clone()
        residual[idx] = 0
        return payload, residual

    @staticmethod
    def indices(payload: bytes | memoryview) -> torch.Tensor:
        """The positions a (valid) payload sends."""
        k = len(payload) // ENTRY_BYTES
        return torch.from_numpy(np.frombuffer(payload, dtype="<u4", count=k).astype(np.int64))

    def decode(self, data: bytes | memoryview, numel: int) -> torch.Tensor:
        idx, vals = self._entries(data, numel)
        out = torch.zeros(numel, dtype=torch.float32)
        out[idx] = vals
        return out

    def add_to(self, base: torch.Tensor, data: bytes | memoryview) -> torch.Tensor:
        """A copy of ``base`` plus the sparse payload, without building the dense vector."""
        idx, vals = self._entries(data, base.numel())
        out = base.clone()
        out[idx] += vals
        return out

    @staticmethod
    def _entries(data: bytes | memoryview, numel: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The checked (indices, values) of a payload; raises RemoteProtocolError."""
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
        return torch.from_numpy(idx.astype(np.int64)), torch.from_numpy(vals.astype(np.float32))

    def max_encoded_bytes(self, numel: int) -> int:
        return ENTRY_BYTES * numel
