"""Tensor codecs: flat float32 vectors <-> bytes, with bounded decoding."""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum

import torch


class CodecId(str, Enum):
    """Codec names; the value travels in PUSH and MODEL headers."""

    RAW = "raw"  # little-endian float32, lossless, no compression
    ZSTD = "zstd"  # float32 with byte shuffle, then zstd: lossless


class Codec(ABC):
    """Turns a 1-D float32 CPU tensor into bytes and back.

    ``decode`` must never allocate more than ``numel * 4`` bytes of output plus a constant,
    whatever the input, and must raise ``RemoteProtocolError`` (TOO_LARGE, BAD_SHAPE or
    BAD_CODEC) on anything it cannot decode.
    """

    id: CodecId
    lossless: bool = True

    @abstractmethod
    def encode(self, flat: torch.Tensor) -> bytes:
        """Encode a 1-D float32 tensor."""

    @abstractmethod
    def decode(self, data: bytes | memoryview, numel: int) -> torch.Tensor:
        """Decode ``numel`` float32 values from ``data``."""

    @abstractmethod
    def max_encoded_bytes(self, numel: int) -> int:
        """The most bytes a valid encoding of ``numel`` values can take."""
