"""Raw tensor frames: exact round trips, sizes checked before anything is built."""

from __future__ import annotations

import pytest
import torch

from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.tensors import MAX_DIMS, frame_to_tensor, tensor_to_frame


@pytest.mark.parametrize("dtype,tensor", [
    ("uint8", torch.arange(2 * 1 * 3 * 3, dtype=torch.uint8).reshape(2, 1, 3, 3)),
    ("int64", torch.tensor([-(2**63), -1, 0, 1, 2**63 - 1], dtype=torch.int64)),
    ("float32", torch.tensor([0.0, -0.0, 1e-45, 3.4e38, -3.4e38, float("inf")])),
    ("uint8", torch.zeros(0, 1, 28, 28, dtype=torch.uint8)),
    # what a graph's state may hold (frozen weights, buffers, constants)
    ("float64", torch.tensor([1e-300, -2.5], dtype=torch.float64)),
    ("float16", torch.tensor([65504.0, -0.0], dtype=torch.float16)),
    ("bfloat16", torch.tensor([3.0e38, -1.5], dtype=torch.bfloat16)),
    ("int32", torch.tensor([-(2**31), 2**31 - 1], dtype=torch.int32)),
    ("int16", torch.tensor([-(2**15), 7], dtype=torch.int16)),
    ("int8", torch.tensor([-128, 127], dtype=torch.int8)),
    ("bool", torch.tensor([True, False, True])),
])
def test_round_trip_is_exact(dtype: str, tensor: torch.Tensor) -> None:
    frame = tensor_to_frame(tensor)
    assert len(frame) == tensor.numel() * tensor.element_size()
    back = frame_to_tensor(frame, dtype, list(tensor.shape), len(frame))
    assert back.dtype == tensor.dtype and back.shape == tensor.shape
    assert torch.equal(back, tensor)
    assert torch.equal(back.view(torch.uint8) if dtype != "uint8" else back,
                       tensor.view(torch.uint8) if dtype != "uint8" else tensor)  # -0.0 too


def test_a_bool_is_any_nonzero_byte() -> None:
    assert frame_to_tensor(b"\x00\x01\xff", "bool", [3], 3).tolist() == [False, True, True]


def test_frames_are_little_endian() -> None:
    assert tensor_to_frame(torch.tensor([1], dtype=torch.int64)) == b"\x01" + b"\x00" * 7
    assert tensor_to_frame(torch.tensor([1.0])) == b"\x00\x00\x80\x3f"


def test_decoded_tensor_owns_its_memory() -> None:
    buf = bytearray(tensor_to_frame(torch.tensor([1.0, 2.0])))
    out = frame_to_tensor(memoryview(buf), "float32", [2], 8)
    buf[:] = b"\x00" * 8
    assert out.tolist() == [1.0, 2.0]
    out.add_(1)  # writable, not a view on a read-only frame
    assert out.tolist() == [2.0, 3.0]


def test_non_contiguous_tensors_are_sent_in_logical_order() -> None:
    t = torch.arange(6, dtype=torch.int64).reshape(2, 3).T
    assert frame_to_tensor(tensor_to_frame(t), "int64", [3, 2], 48).tolist() == t.tolist()


def test_unsupported_dtype_is_our_error() -> None:
    with pytest.raises(ValueError, match="complex64"):
        tensor_to_frame(torch.zeros(2, dtype=torch.complex64))


def reject(frame: bytes, dtype: str, shape: list, cap: int) -> RejectCode:
    with pytest.raises(RemoteProtocolError) as info:
        frame_to_tensor(frame, dtype, shape, cap)
    return info.value.code


@pytest.mark.parametrize("frame,dtype,shape,cap,code", [
    (b"\x00" * 7, "float32", [2], 100, RejectCode.BAD_SHAPE),  # one byte short
    (b"\x00" * 9, "float32", [2], 100, RejectCode.BAD_SHAPE),  # one byte over
    (b"\x00" * 8, "complex64", [1], 100, RejectCode.BAD_SHAPE),  # dtype not allowed
    (b"\x00" * 8, "object", [1], 100, RejectCode.BAD_SHAPE),
    (b"", "uint8", [-1], 100, RejectCode.BAD_SHAPE),
    (b"", "uint8", [True], 100, RejectCode.BAD_SHAPE),
    (b"", "uint8", [1.0], 100, RejectCode.BAD_SHAPE),
    (b"\x00", "uint8", [1] * (MAX_DIMS + 1), 100, RejectCode.BAD_SHAPE),
    (b"\x00" * 8, "float32", [2], 7, RejectCode.TOO_LARGE),
    (b"", "int64", [2**62, 2**62], 2**40, RejectCode.TOO_LARGE),
    # empty, but numpy cannot even describe it: must be refused, not raise ValueError
    (b"", "uint8", [0, 2**62, 2**62], 2**40, RejectCode.BAD_SHAPE),
    (b"", "uint8", [0, 2**64], 2**40, RejectCode.BAD_SHAPE),
    (b"", "float32", [2**31, 0, 2**31, 2**31], 0, RejectCode.BAD_SHAPE),
])
def test_rejections(frame: bytes, dtype: str, shape: list, cap: int, code: RejectCode) -> None:
    assert reject(frame, dtype, shape, cap) is code


def test_cap_is_inclusive() -> None:
    assert frame_to_tensor(b"\x00" * 8, "float32", [2], 8).tolist() == [0.0, 0.0]
    assert frame_to_tensor(b"", "float32", [0], 0).shape == (0,)
    assert frame_to_tensor(b"", "uint8", [0, 1, 28, 28], 0).shape == (0, 1, 28, 28)
