"""The lossy codecs (fp16, bf16, int8, top-k) and error feedback.

Round trips within stated error bounds, exact payload sizes, strict decoding of hostile
payloads (each refusal with its code, sizes checked before allocating), and convergence:
SGD whose gradients travel through int8 or top-k with error feedback reaches the loss of
lossless SGD on a fixed problem.
"""

from __future__ import annotations

import math
import struct
import tracemalloc

import numpy as np
import pytest
import torch

from computeshare_desktop.codec import ErrorFeedback, get_codec, make_codec
from computeshare_desktop.codec.base import Codec
from computeshare_desktop.codec.half import FP16_MAX
from computeshare_desktop.codec.int8 import BLOCK, blocks
from computeshare_desktop.codec.topk import TopKCodec
from computeshare_desktop.errors import ConfigError, RemoteProtocolError
from computeshare_desktop.protocol import RejectCode

LOSSY = ("fp16", "bf16", "int8", "topk")


def randn(n: int, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(n, generator=torch.Generator().manual_seed(seed)) * scale


def reject(codec: Codec, data: bytes, numel: int) -> RejectCode:
    with pytest.raises(RemoteProtocolError) as info:
        codec.decode(data, numel)
    return info.value.code


@pytest.fixture(params=LOSSY)
def codec(request: pytest.FixtureRequest) -> Codec:
    return make_codec(request.param)


# ----------------------------------------------------------------- round trips and bounds
@pytest.mark.parametrize("n", [0, 1, 7, BLOCK, BLOCK + 1, 21_840])
def test_sizes_are_exact_and_within_the_cap(codec: Codec, n: int) -> None:
    flat = randn(n)
    data = codec.encode(flat)
    expected = {"fp16": 2 * n, "bf16": 2 * n, "int8": 4 * blocks(n) + n,
                "topk": 8 * TopKCodec().k(n)}[codec.id.value]
    assert len(data) == expected <= codec.max_encoded_bytes(n)
    back = codec.decode(data, n)
    assert back.dtype == torch.float32 and back.shape == (n,)


def test_fp16_and_bf16_relative_error_bounds() -> None:
    flat = randn(50_000, scale=3.0)
    flat = flat[flat.abs() > 1e-3]  # fp16 has no normal numbers below 6.1e-5
    for name, unit in (("fp16", 2.0 ** -11), ("bf16", 2.0 ** -8)):
        back = get_codec(name).decode(get_codec(name).encode(flat), flat.numel())
        assert ((back - flat).abs() <= unit * flat.abs()).all(), name


def test_fp16_clamps_instead_of_overflowing() -> None:
    flat = torch.tensor([1e6, -1e9, 70_000.0, 1.0])
    back = get_codec("fp16").decode(get_codec("fp16").encode(flat), 4)
    assert back.tolist() == [FP16_MAX, -FP16_MAX, FP16_MAX, 1.0]


def test_int8_error_is_at_most_half_a_step_per_block() -> None:
    flat = randn(10 * BLOCK + 5, seed=3) * torch.linspace(1e-4, 10, 10 * BLOCK + 5)
    int8 = get_codec("int8")
    back = int8.decode(int8.encode(flat), flat.numel())
    padded = torch.zeros(blocks(flat.numel()) * BLOCK)
    padded[:flat.numel()] = flat
    step = padded.view(-1, BLOCK).abs().amax(1) / 127
    bound = (step / 2).repeat_interleave(BLOCK)[:flat.numel()]
    assert ((back - flat).abs() <= bound * (1 + 1e-6) + 1e-12).all()
    assert torch.equal(int8.decode(int8.encode(torch.zeros(300)), 300), torch.zeros(300))


def test_topk_keeps_exactly_the_largest_values() -> None:
    flat = randn(1_000, seed=4)
    back = TopKCodec(0.05).decode(TopKCodec(0.05).encode(flat), 1_000)
    kept = back != 0
    assert int(kept.sum()) == 50
    assert torch.equal(back[kept], flat[kept])  # values travel exactly
    assert flat[kept].abs().min() >= flat[~kept].abs().max()


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.5, float("nan")])
def test_topk_fraction_must_be_in_range(fraction: float) -> None:
    with pytest.raises(ConfigError):
        TopKCodec(fraction)


# ----------------------------------------------------------------- error feedback
@pytest.mark.parametrize("name", LOSSY)
def test_error_feedback_loses_nothing_over_rounds(name: str) -> None:
    """Sum of what the receiver got + the final residual == sum of what was sent."""
    ef = ErrorFeedback(make_codec(name, topk=0.02))
    sent_total, received_total = torch.zeros(5_000), torch.zeros(5_000)
    for step in range(40):
        x = randn(5_000, seed=step, scale=1e-2)
        enc = ef.encode(x)
        ef.keep(enc)
        sent_total += x
        received_total += ef.codec.decode(enc.payload, 5_000)
    assert ef.residual is not None
    assert torch.allclose(received_total + ef.residual, sent_total, atol=1e-5)
    # and the residual stays bounded: it never holds more than a few rounds' worth
    assert ef.residual.norm() < 8 * randn(5_000, scale=1e-2).norm()


def test_error_feedback_only_keeps_what_was_accepted() -> None:
    ef = ErrorFeedback(make_codec("topk", topk=0.1))
    first = ef.encode(randn(100, seed=1))
    assert ef.residual is None  # proposed, not kept
    ef.keep(first)
    kept = ef.residual.clone()
    ef.encode(randn(100, seed=2))  # refused by the receiver: never kept
    assert torch.equal(ef.residual, kept)


def test_lossless_codecs_pass_through_error_feedback() -> None:
    ef = ErrorFeedback(get_codec("zstd"))
    x = randn(1_000)
    enc = ef.encode(x)
    assert enc.residual is None and torch.equal(ef.codec.decode(enc.payload, 1_000), x)


def _least_squares(codec: str | None, *, feedback: bool = True, steps: int = 400) -> float:
    """SGD with momentum on a fixed least-squares problem; gradients travel through ``codec``.

    Returns the final mean squared residual; the problem's optimum is about 0.01.
    """
    gen = torch.Generator().manual_seed(7)
    a = torch.randn(256, 64, generator=gen)
    b = a @ torch.randn(64, generator=gen) + 0.1 * torch.randn(256, generator=gen)
    w, buf = torch.zeros(64), torch.zeros(64)
    ef = ErrorFeedback(make_codec(codec, topk=0.05)) if codec else None
    for _ in range(steps):
        rows = torch.randint(0, 256, (32,), generator=gen)
        grad = a[rows].T @ (a[rows] @ w - b[rows]) / 32
        if ef is not None:
            enc = ef.encode(grad)
            if feedback:
                ef.keep(enc)
            grad = ef.codec.decode(enc.payload, 64)
        buf = 0.9 * buf + grad
        w = w - 0.002 * buf
    return float(((a @ w - b) ** 2).mean())


@pytest.mark.parametrize("codec", LOSSY)
def test_sgd_through_a_lossy_codec_with_error_feedback_reaches_the_lossless_loss(
        codec: str) -> None:
    lossless = _least_squares(None)
    assert lossless < 0.05  # SGD itself converged: the comparison means something
    assert _least_squares(codec) <= lossless * 1.05 + 1e-3


def test_topk_without_error_feedback_falls_short() -> None:
    """The feedback is what makes top-k work: at 5% without it the loss stays far higher."""
    assert _least_squares("topk", feedback=False) > 1.5 * _least_squares(None)


# ----------------------------------------------------------------- hostile payloads
def test_every_lossy_codec_rejects_wrong_sizes(codec: Codec) -> None:
    data = codec.encode(randn(300))
    assert reject(codec, data + b"\x00" * 3, 300) in (RejectCode.BAD_SHAPE, RejectCode.TOO_LARGE)
    assert reject(codec, data, -1) is RejectCode.BAD_SHAPE
    if codec.id.value != "topk":  # a sparse payload may hold fewer entries
        assert reject(codec, data[:-2], 300) is RejectCode.BAD_SHAPE
        assert reject(codec, data, 301) is RejectCode.BAD_SHAPE


@pytest.mark.parametrize("numel", [2**40, 2**62])
def test_a_lying_numel_allocates_nothing(codec: Codec, numel: int) -> None:
    tracemalloc.start()
    try:
        reject(codec, codec.encode(randn(64)), numel)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def _int8_payload(scales: list[float], values: list[int]) -> bytes:
    return struct.pack(f"<{len(scales)}f", *scales) + bytes(v & 0xFF for v in values)


@pytest.mark.parametrize("scale", [float("nan"), float("inf"), float("-inf")])
def test_int8_non_finite_scale_is_not_finite(scale: float) -> None:
    data = _int8_payload([0.5, scale], [1] * (BLOCK + 3))
    assert reject(get_codec("int8"), data, BLOCK + 3) is RejectCode.NOT_FINITE


def test_int8_negative_scale_and_minus_128_are_bad_codec() -> None:
    int8 = get_codec("int8")
    assert reject(int8, _int8_payload([-0.5], [1] * 10), 10) is RejectCode.BAD_CODEC
    assert reject(int8, _int8_payload([0.5], [1] * 9 + [-128]), 10) is RejectCode.BAD_CODEC
    assert int8.decode(_int8_payload([0.5], [-127] + [0] * 9), 10)[0] == -63.5


def _sparse(indices: list[int], values: list[float]) -> bytes:
    return (np.array(indices, dtype="<u4").tobytes() + np.array(values, dtype="<f4").tobytes())


@pytest.mark.parametrize("indices,code", [
    ([0, 5, 100], RejectCode.BAD_INDEX),  # out of range for numel 100
    ([0, 2**32 - 1, 5], RejectCode.BAD_INDEX),
    ([3, 3, 7], RejectCode.BAD_INDEX),  # duplicate
    ([7, 3, 9], RejectCode.BAD_INDEX),  # out of order
])
def test_topk_bad_indices_are_rejected(indices: list[int], code: RejectCode) -> None:
    assert reject(get_codec("topk"), _sparse(indices, [1.0] * 3), 100) is code


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_topk_non_finite_value_is_not_finite(value: float) -> None:
    assert reject(get_codec("topk"), _sparse([1, 2], [1.0, value]), 10) is RejectCode.NOT_FINITE


def test_topk_more_entries_than_values_is_too_large() -> None:
    data = _sparse(list(range(11)), [1.0] * 11)
    assert reject(get_codec("topk"), data, 10) is RejectCode.TOO_LARGE
    assert reject(get_codec("topk"), data[:-1], 11) is RejectCode.BAD_SHAPE


def test_topk_empty_payload_is_all_zeros() -> None:
    assert torch.equal(get_codec("topk").decode(b"", 5), torch.zeros(5))


def test_fp16_and_bf16_decode_non_finite_for_the_caller_to_refuse() -> None:
    """They carry every 16-bit pattern; the hub's finiteness check refuses NaN (NOT_FINITE)."""
    nan16 = np.array([0x7E00], dtype="<u2").tobytes()
    assert math.isnan(get_codec("fp16").decode(nan16, 1)[0])
    assert math.isnan(get_codec("bf16").decode(np.array([0x7FC0], "<u2").tobytes(), 1)[0])


@pytest.mark.parametrize("n,k", [(11_000_000, 110_000), (300_000, 3_000), (1_000_000, 500)])
def test_fast_top_k_selection_is_exact(n: int, k: int) -> None:
    """The sampled threshold only narrows the search: the result is the exact top-k."""
    from computeshare_desktop.codec.topk import top_indices

    gen = torch.Generator().manual_seed(n)
    magnitudes = (torch.randn(n, generator=gen) * torch.rand(n, generator=gen) ** 3).abs()
    fast = top_indices(magnitudes, k).sort().values
    exact = torch.topk(magnitudes, k).indices.sort().values
    assert torch.equal(fast, exact)


def test_residual_of_top_k_is_what_was_not_sent() -> None:
    x = randn(10_000, seed=9)
    payload, residual = TopKCodec(0.01).encode_residual(x)
    sent = get_codec("topk").decode(payload, 10_000)
    assert torch.equal(sent + residual, x)
    assert torch.equal(TopKCodec.indices(payload), sent.nonzero().squeeze(1))


@pytest.mark.parametrize("nonzero", [0.005, 0.02, 0.5])
def test_top_k_of_a_sparse_update_is_exact_and_never_keeps_zeros(nonzero: float) -> None:
    """The hub's model deltas under top-k are sparse (what the pushes changed)."""
    from computeshare_desktop.codec.topk import top_indices

    n, k = 2_000_000, 20_000  # 1%
    gen = torch.Generator().manual_seed(1)
    values = torch.randn(n, generator=gen) * (torch.rand(n, generator=gen) < nonzero)
    fast = top_indices(values.abs(), k).sort().values
    count = int((values != 0).sum())
    if count <= k:
        assert torch.equal(fast, values.nonzero().squeeze(1))
    else:
        exact = torch.topk(values.abs(), k).indices.sort().values
        assert torch.equal(fast, exact)
    assert bool((values[fast] != 0).all())
    payload = TopKCodec(0.01).encode(values)
    assert len(payload) == 8 * min(k, count)


@pytest.mark.parametrize("name", LOSSY)
def test_add_to_equals_adding_the_decoding_bitwise(name: str) -> None:
    """Model deltas are applied with add_to; the hub and every worker must agree bitwise."""
    codec = make_codec(name)
    base, delta = randn(50_000, seed=3), randn(50_000, seed=4, scale=1e-3)
    payload = codec.encode(delta)
    expected = base + codec.decode(payload, 50_000)
    got = codec.add_to(base, payload)
    assert torch.equal(got.view(torch.int32), expected.view(torch.int32))
    assert not torch.equal(base, got)  # base itself is untouched: add_to makes a new tensor
    assert torch.equal(base, randn(50_000, seed=3))
