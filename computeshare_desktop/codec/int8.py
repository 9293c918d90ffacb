"""int8 with a scale per block: about one byte a value, lossy.

The vector is cut into blocks of ``BLOCK`` values; each block stores one little-endian
float32 scale (its largest magnitude / 127) and each value the nearest integer multiple of
that scale, in [-127, 127]. Payload: all scales, then all int8 values (no padding), so its
size follows from ``numel`` alone and is checked before anything is allocated. A block of
zeros has scale 0. Rounding error is at most half a step: ``scale / 2`` per value.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import RemoteProtocolError
from ..protocol.codes import RejectCode
from .base import Codec, CodecId, check_numel

BLOCK = 128
LEVELS = 127


def blocks(numel: int) -> int:
    """How many blocks (and so scales) ``numel`` values take."""
    return -(-numel // BLOCK)


class Int8Codec(Codec):
    """Symmetric int8 quantisation with per-block absmax scales."""

    id = CodecId.INT8
    lossless = False
    finite = True
    wire_fraction = 0.26

    def encode(self, flat: torch.Tensor) -> bytes:
        values = flat.detach().reshape(-1).to("cpu", torch.float32)
        n = values.numel()
        padded = torch.zeros(blocks(n) * BLOCK, dtype=torch.float32)
        padded[:n] = values
        grid = padded.view(-1, BLOCK)
        scales = grid.abs().amax(dim=1) / LEVELS
        safe = torch.where(scales > 0, scales, torch.ones_like(scales))
        q = torch.round(grid / safe[:, None]).clamp_(-LEVELS, LEVELS).to(torch.int8)
        return (scales.numpy().astype("<f4", copy=False).tobytes()
                + q.view(-1)[:n].numpy().tobytes())

    def decode(self, data: bytes | memoryview, numel: int) -> torch.Tensor:
        numel = check_numel(numel)
        nblocks = blocks(numel)
        if len(data) != 4 * nblocks + numel:
            raise RemoteProtocolError(RejectCode.BAD_SHAPE,
                                      f"{len(data)} bytes for {numel} int8 values")
        scales = np.frombuffer(data, dtype="<f4", count=nblocks)
        if not np.isfinite(scales).all():
            raise RemoteProtocolError(RejectCode.NOT_FINITE, "a block scale is not finite")
        if (scales < 0).any():
            raise RemoteProtocolError(RejectCode.BAD_CODEC, "a block scale is negative")
        q = np.frombuffer(data, dtype=np.int8, count=numel, offset=4 * nblocks)
        if numel and int(q.min()) < -LEVELS:
            raise RemoteProtocolError(RejectCode.BAD_CODEC, "int8 value -128 is not allowed")
        out = torch.zeros(nblocks * BLOCK, dtype=torch.float32)
        out[:numel] = torch.from_numpy(q.astype(np.float32))
        grid = out.view(-1, BLOCK)
        grid.mul_(torch.from_numpy(scales.astype(np.float32))[:, None])
        return out[:numel].clone() if nblocks * BLOCK != numel else out

    def max_encoded_bytes(self, numel: int) -> int:
        return 4 * blocks(numel) + numel
