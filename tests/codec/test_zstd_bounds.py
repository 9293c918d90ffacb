"""Bounded decompression: bombs, corrupt and oversized zstd payloads cost little and are refused."""

from __future__ import annotations

import time
import tracemalloc

import pytest
import torch
import zstandard

from computeshare_desktop.codec import get_codec
from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.protocol import RejectCode

ZSTD = get_codec("zstd")
BOMB_BYTES = 64 * 1024 * 1024
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def bomb_undeclared() -> bytes:
    """~2 kB that inflate to 64 MiB of zeros; the frame does not say how much."""
    cobj = zstandard.ZstdCompressor(level=1).compressobj()
    chunk = bytes(MiB)
    data = b"".join(cobj.compress(chunk) for _ in range(BOMB_BYTES // MiB)) + cobj.flush()
    assert zstandard.frame_content_size(data) == -1
    return data


@pytest.fixture(scope="module")
def bomb_declared() -> bytes:
    """~2 kB whose frame header declares 64 MiB."""
    cobj = zstandard.ZstdCompressor(level=1)
    data = cobj.compress(bytes(BOMB_BYTES))
    assert zstandard.frame_content_size(data) == BOMB_BYTES
    return data


def measured_reject(data: bytes, numel: int) -> tuple[RejectCode, float, int]:
    """(code, seconds, tracemalloc peak bytes) of decoding ``data`` as ``numel`` values."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(RemoteProtocolError) as info:
            ZSTD.decode(data, numel)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return info.value.code, seconds, peak


@pytest.mark.parametrize("numel", [1_000, 21_840, 1 << 20])
def test_declared_size_bomb_is_refused_before_inflating(bomb_declared: bytes, numel: int) -> None:
    assert len(bomb_declared) <= ZSTD.max_encoded_bytes(numel)
    code, seconds, peak = measured_reject(bomb_declared, numel)
    assert code is RejectCode.TOO_LARGE
    assert seconds < 0.1
    assert peak < 64 * 1024  # nothing but the header was looked at


@pytest.mark.parametrize("numel", [1_000, 21_840, 1 << 20])
def test_undeclared_size_bomb_stops_at_the_cap(bomb_undeclared: bytes, numel: int) -> None:
    assert len(bomb_undeclared) <= ZSTD.max_encoded_bytes(numel)
    code, seconds, peak = measured_reject(bomb_undeclared, numel)
    assert code is RejectCode.TOO_LARGE
    assert seconds < 1.0
    assert peak < 4 * numel * 4 + MiB, f"peak {peak} bytes for a cap of {4 * numel} bytes"


def test_valid_decode_memory_is_a_few_outputs() -> None:
    numel = 1 << 20
    gen = torch.Generator().manual_seed(0)
    data = ZSTD.encode(torch.randn(numel, generator=gen))
    tracemalloc.start()
    try:
        out = ZSTD.decode(data, numel)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.numel() == numel
    assert peak < 4 * numel * 4 + MiB


def test_payload_longer_than_max_encoded_bytes_is_too_large() -> None:
    numel = 1000
    cap = ZSTD.max_encoded_bytes(numel)
    valid = ZSTD.encode(torch.zeros(numel))
    padded = valid + b"\x00" * (cap - len(valid))
    with pytest.raises(RemoteProtocolError) as info:
        ZSTD.decode(padded, numel)
    assert info.value.code is RejectCode.BAD_CODEC  # at the cap: read, and trailing junk refused
    with pytest.raises(RemoteProtocolError) as info:
        ZSTD.decode(padded + b"\x00", numel)
    assert info.value.code is RejectCode.TOO_LARGE  # one byte over: refused unread
    assert str(cap + 1) in info.value.detail


def test_window_larger_than_allowed_is_bad_codec() -> None:
    params = zstandard.ZstdCompressionParameters.from_level(1, window_log=27)
    cobj = zstandard.ZstdCompressor(compression_params=params).compressobj()
    big_window = cobj.compress(bytes(1000)) + cobj.flush()
    assert zstandard.get_frame_parameters(big_window).window_size == 1 << 27
    with pytest.raises(RemoteProtocolError) as info:
        ZSTD.decode(big_window, 250)
    assert info.value.code is RejectCode.BAD_CODEC


def corruptions() -> dict[str, tuple[bytes, int]]:
    gen = torch.Generator().manual_seed(3)
    flat = torch.randn(4096, generator=gen)
    good = ZSTD.encode(flat)
    undeclared = zstandard.ZstdCompressor(write_content_size=False).compress(
        flat.numpy().view("u1").reshape(-1, 4).T.tobytes())
    reserved_block = bytearray(good)
    reserved_block[zstandard.frame_header_size(good)] |= 0b110  # block type 3 is reserved
    return {
        "empty": (b"", 4096),
        "not zstd": (b"hello world, no zstd magic here", 4096),
        "magic only": (good[:4], 4096),
        "header only": (good[:12], 4096),
        "truncated half": (good[: len(good) // 2], 4096),
        "truncated last byte": (good[:-1], 4096),
        "undeclared truncated": (undeclared[: len(undeclared) // 2], 4096),
        "reserved block type": (bytes(reserved_block), 4096),
        "bad checksum": (zstandard.ZstdCompressor(write_checksum=True).compress(b"\0" * 400)[:-1]
                         + b"\x00", 100),
        "skippable frame": (b"\x50\x2a\x4d\x18" + (4).to_bytes(4, "little") + b"abcd", 4096),
        "short content": (zstandard.ZstdCompressor().compress(b"\0" * 40), 11),
    }


@pytest.mark.parametrize("name", list(corruptions()))
def test_corrupt_or_truncated_payload_is_refused(name: str) -> None:
    data, numel = corruptions()[name]
    with pytest.raises(RemoteProtocolError) as info:
        ZSTD.decode(data, numel)
    assert info.value.code in (RejectCode.BAD_CODEC, RejectCode.BAD_SHAPE), info.value


def test_a_second_frame_is_refused() -> None:
    zeros = ZSTD.encode(torch.zeros(4096))
    assert torch.equal(ZSTD.decode(zeros, 4096), torch.zeros(4096))
    with pytest.raises(RemoteProtocolError) as info:
        ZSTD.decode(zeros + zeros, 4096)
    assert info.value.code in (RejectCode.BAD_CODEC, RejectCode.TOO_LARGE)
