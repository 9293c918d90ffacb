"""Tensor codecs: flat float32 vectors <-> bytes, with bounded decoding."""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum

import torch

from ..errors import RemoteProtocolError
from ..protocol.codes import RejectCode


class CodecId(str, Enum):
    """Codec names; the value travels in PUSH and MODEL headers."""

    RAW = "raw"  # little-endian float32, lossless, no compression
    ZSTD = "zstd"  # float32 with byte shuffle, then zstd: lossless
    FP16 = "fp16"  # IEEE half precision: 2 bytes a value, lossy
    BF16 = "bf16"  # bfloat16 (float32's exponent, 8-bit mantissa): 2 bytes a value, lossy
    INT8 = "int8"  # int8 with one float32 scale per block of values: ~1 byte a value, lossy
    TOPK = "topk"  # the largest k values by magnitude, as (index, value) pairs: sparse, lossy


class Codec(ABC):
    """Turns a 1-D float32 CPU tensor into bytes and back.

    ``decode`` must never allocate more than ``numel * 4`` bytes of output plus a constant,
    whatever the input, and must raise ``RemoteProtocolError`` (TOO_LARGE, BAD_SHAPE,
    BAD_CODEC, BAD_INDEX or NOT_FINITE) on anything it cannot decode. Lossy codecs are used
    through ``ErrorFeedback``, so what one encoding drops is sent with the next.

    What the rest of the program needs to know about a codec is one of its properties
    below: no module outside ``codec/`` asks for a codec's name or class.
    """

    id: CodecId
    lossless: bool = True
    finite: bool = False  # decoding checks every value is finite (no need to check again)
    sparse: bool = False  # sends a fraction of the values (``indices``); the rest arrive as 0
    # Bytes on the wire per float32 byte of input, measured on real gradients (a sparse
    # codec's follows from its fraction).
    wire_fraction: float = 1.0

    @property
    def needs_error_feedback(self) -> bool:
        """True when an encoding drops something that the next one must carry (lossy)."""
        return not self.lossless

    def configured(self, *, fraction: float) -> Codec:
        """This codec with its parameter: a sparse codec keeps ``fraction`` of the values;
        the others have no parameter and return themselves."""
        return self

    def indices(self, payload: bytes | memoryview) -> torch.Tensor:
        """The positions a (valid) payload of a sparse codec sends; a dense one sends all."""
        raise NotImplementedError(f"{self.id.value} is not sparse: it sends every value")

    @abstractmethod
    def encode(self, flat: torch.Tensor) -> bytes:
        """Encode a 1-D float32 tensor."""

    @abstractmethod
    def decode(self, data: bytes | memoryview, numel: int) -> torch.Tensor:
        """Decode ``numel`` float32 values from ``data``."""

    @abstractmethod
    def max_encoded_bytes(self, numel: int) -> int:
        """The most bytes a valid encoding of ``numel`` values can take."""

    def add_to(self, base: torch.Tensor, data: bytes | memoryview) -> torch.Tensor:
        """``base`` plus the decoded payload, as a new tensor (sparse codecs do it cheaper)."""
        return base + self.decode(data, base.numel())

    def encode_residual(self, flat: torch.Tensor) -> tuple[bytes, torch.Tensor]:
        """The encoding of ``flat`` and what it leaves out (``flat`` minus its decoding)."""
        payload = self.encode(flat)
        return payload, flat - self.decode(payload, flat.numel())


# The most values any decoder produces (1 GiB of float32). Callers pass the model's own
# size, but a sparse payload decodes to ``numel`` zeros whatever its length, so the bound
# must hold even for a numel nobody checked.
MAX_NUMEL = 1 << 28


def check_numel(numel: object) -> int:
    """``numel`` as a non-negative int within MAX_NUMEL, or RemoteProtocolError."""
    if type(numel) is not int or numel < 0:
        raise RemoteProtocolError(RejectCode.BAD_SHAPE, f"numel={numel!r}")
    if numel > MAX_NUMEL:
        raise RemoteProtocolError(RejectCode.TOO_LARGE, f"{numel} values (cap {MAX_NUMEL})")
    return numel
