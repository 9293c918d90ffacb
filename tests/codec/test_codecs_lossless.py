"""The lossless codecs: registry lookups, bit-exact round trips, and the size checks of ``decode``.

The lossy codecs have their own module (test_codecs_lossy.py)."""

from __future__ import annotations

import pytest
import torch

from computeshare_desktop.codec import CODECS, LOSSLESS, CodecId, get_codec
from computeshare_desktop.codec.base import Codec
from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.protocol import RejectCode

EXTREMES = torch.tensor([
    0.0, -0.0, 1.0, -1.0,
    torch.finfo(torch.float32).tiny, -torch.finfo(torch.float32).tiny,  # smallest normal
    1e-45, -1e-45, 1e-40, 5.877e-39,  # subnormals
    torch.finfo(torch.float32).max, torch.finfo(torch.float32).min,
    torch.finfo(torch.float32).eps, 1e30, -1e-30, 3.14159265,
])


def vectors() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return {
        "empty": torch.zeros(0),
        "one": torch.tensor([-2.5]),
        "odd": torch.randn(7, generator=gen),
        "random": torch.randn(21_840, generator=gen) * 1e-3,
        "zeros": torch.zeros(10_000),
        "extremes": EXTREMES,
        "extremes_repeated": EXTREMES.repeat(257),
        "infinities": torch.tensor([float("inf"), float("-inf"), 0.0]),
    }


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)


@pytest.fixture(params=LOSSLESS)
def codec(request: pytest.FixtureRequest) -> Codec:
    return get_codec(request.param)


def test_registry_resolves_every_codec_id() -> None:
    assert CODECS == ("raw", "zstd", "fp16", "bf16", "int8", "topk")
    assert LOSSLESS == ("raw", "zstd")
    for cid in CodecId:
        c = get_codec(cid.value)
        assert c.id is cid and isinstance(c, Codec) and c.lossless == (cid.value in LOSSLESS)
    assert get_codec(CodecId.ZSTD) is get_codec("zstd")  # a str enum works as its name


@pytest.mark.parametrize("name", ["lz4", "", "RAW", "zstd ", "none", "fp32", "top-k"])
def test_unknown_codec_is_bad_codec(name: str) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        get_codec(name)
    assert info.value.code is RejectCode.BAD_CODEC
    assert repr(name) in info.value.detail


@pytest.mark.parametrize("kind", list(vectors()))
def test_round_trip_is_bit_exact(codec: Codec, kind: str) -> None:
    flat = vectors()[kind]
    data = codec.encode(flat)
    assert isinstance(data, bytes)
    assert len(data) <= codec.max_encoded_bytes(flat.numel())
    back = codec.decode(data, flat.numel())
    assert back.dtype == torch.float32 and back.shape == (flat.numel(),)
    assert torch.equal(back, flat)
    assert torch.equal(bits(back), bits(flat))  # -0.0 stays -0.0, subnormals stay


def test_nan_payloads_survive_bitwise(codec: Codec) -> None:
    raw = torch.tensor([0x7FC00000, 0x7FC00001, -0x00400000, 0x7F800001], dtype=torch.int32)
    flat = raw.view(torch.float32)
    assert torch.equal(bits(codec.decode(codec.encode(flat), 4)), raw)


def test_encode_flattens_and_converts(codec: Codec) -> None:
    x = torch.arange(12, dtype=torch.float64).reshape(3, 4).T  # 2-D, float64, not contiguous
    back = codec.decode(codec.encode(x), 12)
    assert back.tolist() == [float(v) for v in x.reshape(-1).tolist()]


def test_decode_accepts_memoryview_and_does_not_alias(codec: Codec) -> None:
    flat = torch.tensor([1.0, 2.0, 3.0])
    buf = bytearray(codec.encode(flat))
    back = codec.decode(memoryview(buf), 3)
    buf[:] = bytes(len(buf))
    assert back.tolist() == [1.0, 2.0, 3.0]
    back.mul_(2)  # writable
    assert back.tolist() == [2.0, 4.0, 6.0]


def test_zstd_compresses_zeros_and_shuffles_bytes() -> None:
    zstd = get_codec("zstd")
    assert len(zstd.encode(torch.zeros(100_000))) < 1_000
    # the same magnitude everywhere: shuffled exponent planes are runs zstd eats
    gen = torch.Generator().manual_seed(1)
    grads = (torch.rand(50_000, generator=gen) + 1.0)
    assert len(zstd.encode(grads)) < 0.8 * len(get_codec("raw").encode(grads))


def reject(codec: Codec, data: bytes, numel: int) -> RejectCode:
    with pytest.raises(RemoteProtocolError) as info:
        codec.decode(data, numel)
    return info.value.code


@pytest.mark.parametrize("delta", [-4, -1, 1, 4])
def test_raw_wrong_length_is_bad_shape(delta: int) -> None:
    raw = get_codec("raw")
    data = raw.encode(torch.ones(10))
    assert reject(raw, data[:delta] if delta < 0 else data + b"\x00" * delta, 10) \
        is RejectCode.BAD_SHAPE


def test_negative_numel_is_bad_shape(codec: Codec) -> None:
    assert reject(codec, b"", -1) is RejectCode.BAD_SHAPE
    assert reject(codec, codec.encode(torch.ones(1)), -1) is RejectCode.BAD_SHAPE


def test_numel_mismatch_is_refused(codec: Codec) -> None:
    data = codec.encode(torch.ones(10))
    assert reject(codec, data, 11) is RejectCode.BAD_SHAPE
    code = reject(codec, data, 9)
    assert code is (RejectCode.BAD_SHAPE if codec.id is CodecId.RAW else RejectCode.TOO_LARGE)


def test_max_encoded_bytes_bounds_incompressible_data() -> None:
    zstd = get_codec("zstd")
    gen = torch.Generator().manual_seed(2)
    for n in (0, 1, 100, 100_000):
        noise = torch.randint(-(2**31), 2**31 - 1, (n,), dtype=torch.int32, generator=gen)
        flat = noise.view(torch.float32)
        assert len(zstd.encode(flat)) <= zstd.max_encoded_bytes(n)
        assert len(get_codec("raw").encode(flat)) == get_codec("raw").max_encoded_bytes(n) == 4 * n
