"""Raw tensor frames: decoded from dtype, shape and bytes only, sizes checked first."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from ..errors import RemoteProtocolError
from .codes import RejectCode
from .messages import SampleDtype

DTYPES: dict[str, torch.dtype] = {
    "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float32": torch.float32, "float64": torch.float64, "bool": torch.bool}
# How the bytes are read: bfloat16 (numpy has none) as its 16 bits, bool as bytes (any
# nonzero byte is True, so no byte pattern makes an invalid bool).
_NP: dict[str, np.dtype] = {
    "uint8": np.dtype("<u1"), "int8": np.dtype("<i1"), "int16": np.dtype("<i2"),
    "int32": np.dtype("<i4"), "int64": np.dtype("<i8"), "float16": np.dtype("<f2"),
    "bfloat16": np.dtype("<i2"), "float32": np.dtype("<f4"), "float64": np.dtype("<f8"),
    "bool": np.dtype("<u1")}
_BITS = {torch.bfloat16: torch.int16, torch.bool: torch.uint8}  # sent as these bits
MAX_DIMS = 8  # the most dimensions a frame may declare (numpy stops at 64)


def tensor_to_frame(tensor: torch.Tensor) -> bytes:
    """Little-endian bytes of a CPU tensor whose dtype is in DTYPES."""
    name = _name(tensor.dtype)
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype in _BITS:
        tensor = tensor.view(_BITS[tensor.dtype])
    return tensor.numpy().astype(_NP[name], copy=False).tobytes()


def sample_dtype(samples: torch.Tensor) -> SampleDtype:
    """How a shard chunk's samples travel: images as uint8, a table's rows as float32."""
    return "float32" if samples.dtype == torch.float32 else "uint8"


def _name(dtype: torch.dtype) -> str:
    for name, d in DTYPES.items():
        if d == dtype:
            return name
    raise ValueError(f"unsupported dtype {dtype}")


def frame_to_tensor(frame: bytes | bytearray | memoryview, dtype: str, shape: Sequence[int],
                    max_bytes: int, *, share: bool = False) -> torch.Tensor:
    """Decode one frame into a tensor of ``dtype`` and ``shape``: a new one, or with
    ``share`` a view of the frame's own memory where it can be (a writable, aligned frame of
    a dtype other than bool), so a large part is never held twice while it is decoded.

    Raises:
        RemoteProtocolError: BAD_SHAPE when the sizes disagree, TOO_LARGE over ``max_bytes``.
    """
    if dtype not in DTYPES:
        raise RemoteProtocolError(RejectCode.BAD_SHAPE, f"dtype {dtype!r} not allowed")
    if len(shape) > MAX_DIMS or any(type(d) is not int or d < 0 for d in shape):
        raise RemoteProtocolError(RejectCode.BAD_SHAPE, f"bad shape {list(shape)[:MAX_DIMS]}")
    nbytes = math.prod(shape) * _NP[dtype].itemsize
    if nbytes > max_bytes:
        raise RemoteProtocolError(RejectCode.TOO_LARGE, f"{nbytes} bytes > cap {max_bytes}")
    if len(frame) != nbytes:
        raise RemoteProtocolError(RejectCode.BAD_SHAPE,
                                  f"frame has {len(frame)} bytes, shape needs {nbytes}")
    try:
        array = np.frombuffer(frame, dtype=_NP[dtype]).reshape(tuple(shape))
    except ValueError:
        # An empty shape such as (0, 2**62, 2**62) needs no bytes, yet numpy cannot build it.
        raise RemoteProtocolError(RejectCode.BAD_SHAPE, f"bad shape {list(shape)}") from None
    # a read-only frame (bytes) is copied: torch warns of, and must never write to, its memory
    shared = share and array.flags.writeable and array.flags.aligned
    tensor = torch.from_numpy(array if shared else array.copy())
    if dtype == "bfloat16":
        return tensor.view(torch.bfloat16)
    return tensor != 0 if dtype == "bool" else tensor
