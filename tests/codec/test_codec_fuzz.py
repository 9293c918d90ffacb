"""The h11 invariant for codecs: any bytes and any numel decode or raise RemoteProtocolError."""

from __future__ import annotations

import math

import torch
import zstandard
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from computeshare_desktop.codec import CodecId, get_codec
from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.protocol import RejectCode

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODES = {RejectCode.TOO_LARGE, RejectCode.BAD_SHAPE, RejectCode.BAD_CODEC,
         RejectCode.BAD_INDEX, RejectCode.NOT_FINITE}
codec_ids = st.sampled_from(list(CodecId))
numels = st.integers(-5, 300) | st.sampled_from([-(2**62), 2**31, 2**40, 2**62])


def decodes_or_rejects(cid: CodecId, data: bytes, numel: int) -> torch.Tensor | None:
    try:
        out = get_codec(cid.value).decode(data, numel)
    except RemoteProtocolError as exc:
        assert exc.code in CODES
        return None
    assert out.dtype == torch.float32 and out.shape == (numel,)
    return out


@FUZZ
@given(codec_ids, st.binary(max_size=1200), numels)
def test_arbitrary_bytes(cid: CodecId, data: bytes, numel: int) -> None:
    decodes_or_rejects(cid, data, numel)


@FUZZ
@given(st.binary(max_size=600), numels, st.booleans())
def test_arbitrary_bytes_behind_a_zstd_magic(data: bytes, numel: int, declare: bool) -> None:
    magic = b"\x28\xb5\x2f\xfd"
    decodes_or_rejects(CodecId.ZSTD, magic + data, numel)
    # a real frame of arbitrary content: decodes exactly when the sizes agree
    frame = zstandard.ZstdCompressor(write_content_size=declare).compress(data)
    out = decodes_or_rejects(CodecId.ZSTD, frame, numel)
    assert (out is not None) == (len(data) == 4 * numel)


@FUZZ
@given(codec_ids, st.lists(st.floats(width=32, allow_nan=False), max_size=64), st.data())
def test_mutated_encodings(cid: CodecId, values: list[float], data: st.DataObject) -> None:
    codec = get_codec(cid.value)
    assume(codec.lossless or all(math.isfinite(v) for v in values))  # lossy: finite input
    flat = torch.tensor(values, dtype=torch.float32)
    encoded = bytearray(codec.encode(flat))
    back = codec.decode(bytes(encoded), len(values))
    if codec.lossless:
        assert torch.equal(back, flat)
    if encoded and data.draw(st.booleans()):
        for _ in range(data.draw(st.integers(1, 3))):
            encoded[data.draw(st.integers(0, len(encoded) - 1))] ^= data.draw(st.integers(1, 255))
    else:
        encoded = encoded[: data.draw(st.integers(0, max(0, len(encoded) - 1)))]
    numel = len(values) + data.draw(st.sampled_from([0, 0, 0, -1, 1]))
    decodes_or_rejects(cid, bytes(encoded), numel)
