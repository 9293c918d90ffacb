"""Model downloads as deltas, so that every worker's copy stays bitwise equal to the hub's.

The hub keeps the *published* weights ``P``: exactly what every worker holds for a version.
To publish new weights ``T`` it sends a delta from ``P`` and then applies that same delta
to ``P`` with ``apply_delta``, the function the workers run, so the two copies cannot drift:

* lossless codecs send the XOR of the float32 bit patterns. ``P`` becomes ``T`` exactly,
  and the high bytes of weights that moved a little are zero, which zstd squeezes.
* lossy codecs send ``T - P`` through the codec. What it drops stays in ``T - P`` and goes
  out with a later version: error feedback on the hub's side, with no extra state.

``weights_check`` is a cheap fingerprint (CRC-32 of the bytes, about 7 ms for ResNet-18)
that the hub sends with each version and the worker recomputes, so any drift (a bug, a bit
flip, a missed version) is caught and repaired with a full snapshot.
"""

from __future__ import annotations

import zlib
from typing import Any

import torch

from .base import Codec

FULL = -1  # the ``base`` of a whole-model payload


def weights_check(flat: torch.Tensor) -> str:
    """8 hex digits that change whenever any bit of ``flat`` (float32, CPU) changes."""
    data: Any = flat.detach().contiguous().view(torch.uint8).numpy()  # a buffer, no copy
    return f"{zlib.crc32(data) & 0xFFFFFFFF:08x}"


def make_delta(codec: Codec, base: torch.Tensor, target: torch.Tensor) -> bytes:
    """The payload that takes ``base`` towards ``target`` (exactly there when lossless)."""
    if codec.lossless:
        bits = base.view(torch.int32) ^ target.contiguous().view(torch.int32)
        return codec.encode(bits.view(torch.float32))
    return codec.encode(target - base)


def apply_delta(codec: Codec, base: torch.Tensor, payload: bytes | memoryview) -> torch.Tensor:
    """The weights after applying ``payload`` to ``base``; raises RemoteProtocolError."""
    if codec.lossless:
        decoded = codec.decode(payload, base.numel())
        return (base.view(torch.int32) ^ decoded.view(torch.int32)).view(torch.float32)
    return codec.add_to(base, payload)
