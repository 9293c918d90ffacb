"""The raw codec: little-endian float32 bytes."""

from __future__ import annotations

import torch

from ..protocol.tensors import frame_to_tensor, tensor_to_frame
from .base import Codec, CodecId


class RawCodec(Codec):
    """Lossless and free to encode; the baseline every other codec is measured against."""

    id = CodecId.RAW
    wire_fraction = 1.0

    def encode(self, flat: torch.Tensor) -> bytes:
        return tensor_to_frame(flat.to(torch.float32).reshape(-1))

    def decode(self, data: bytes | memoryview, numel: int) -> torch.Tensor:
        return frame_to_tensor(data, "float32", [numel], self.max_encoded_bytes(numel))

    def max_encoded_bytes(self, numel: int) -> int:
        return 4 * numel
