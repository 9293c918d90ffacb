"""Half-width floats: fp16 and bfloat16, two bytes a value.

fp16 keeps 11 bits of mantissa but only 5 of exponent, so values past 65504 are clamped
before conversion (error feedback carries the excess into the next round) and values below
6e-8 flush to zero. bfloat16 keeps float32's exponent and 8 bits of mantissa: no clamping,
coarser rounding. Both round to nearest even; both decode to float32 exactly.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import RemoteProtocolError
from ..protocol.codes import RejectCode
from .base import Codec, CodecId, check_numel

FP16_MAX = 65504.0


def _words(data: bytes | memoryview, numel: int) -> torch.Tensor:
    """The frame as ``numel`` int16 words (a copy); the size is checked before the copy."""
    numel = check_numel(numel)
    if len(data) != 2 * numel:
        raise RemoteProtocolError(RejectCode.BAD_SHAPE,
                                  f"{len(data)} bytes for {numel} two-byte values")
    return torch.from_numpy(np.frombuffer(data, dtype="<i2", count=numel).copy())


class Fp16Codec(Codec):
    """IEEE 754 half precision."""

    id = CodecId.FP16
    lossless = False
    wire_fraction = 0.5

    def encode(self, flat: torch.Tensor) -> bytes:
        values = flat.detach().reshape(-1).to("cpu", torch.float32)
        half = values.clamp(-FP16_MAX, FP16_MAX).to(torch.float16)
        return half.numpy().astype("<f2", copy=False).tobytes()

    def decode(self, data: bytes | memoryview, numel: int) -> torch.Tensor:
        return _words(data, numel).view(torch.float16).to(torch.float32)

    def max_encoded_bytes(self, numel: int) -> int:
        return 2 * numel


class Bf16Codec(Codec):
    """bfloat16: the upper half of a float32, rounded to nearest even."""

    id = CodecId.BF16
    lossless = False
    wire_fraction = 0.5

    def encode(self, flat: torch.Tensor) -> bytes:
        values = flat.detach().reshape(-1).to("cpu", torch.float32)
        words = values.to(torch.bfloat16).view(torch.int16).numpy()
        return words.astype("<i2", copy=False).tobytes()

    def decode(self, data: bytes | memoryview, numel: int) -> torch.Tensor:
        return _words(data, numel).view(torch.bfloat16).to(torch.float32)

    def max_encoded_bytes(self, numel: int) -> int:
        return 2 * numel
