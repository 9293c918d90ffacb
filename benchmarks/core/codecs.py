"""Codec encode/decode time and compression ratio on real gradients and weights."""

from __future__ import annotations

import functools
import gzip
import time
from typing import Any, Callable

import numpy as np
import torch
import zstandard

from benchmarks._common import median, p90
from computeshare_desktop.codec import get_codec
from computeshare_desktop.data import dataset_info
from computeshare_desktop.models import build_model, flat_gradients, flat_parameters

from .plan import CODECS
from .replay import real_gradients, simplenet


def time_calls(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    fn()  # warm up
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return median(times), p90(times)


def codec_rows(name: str, flat: torch.Tensor, calls: int) -> list[list[str]]:
    rows = []
    raw_bytes = flat.numel() * 4
    for c in CODECS:
        codec = get_codec(c)
        data = codec.encode(flat)
        assert torch.equal(codec.decode(data, flat.numel()), flat), f"{c} is not lossless"
        enc = time_calls(functools.partial(codec.encode, flat), calls)
        dec = time_calls(functools.partial(codec.decode, data, flat.numel()), calls)
        rows.append([name, f"{flat.numel():,}", c, f"{len(data):,}", f"{raw_bytes / len(data):.3f}",
                     f"{1000 * enc[0]:.3f}", f"{1000 * enc[1]:.3f}", f"{1000 * dec[0]:.3f}",
                     f"{1000 * dec[1]:.3f}", str(calls)])
    return rows


def compressibility(grad: torch.Tensor) -> str:
    """Sizes of other lossless encodings of the same gradient, for reference only."""
    values = grad.numpy().astype("<f4")
    plain, shuffled = values.tobytes(), values.view(np.uint8).reshape(-1, 4).T.tobytes()
    sizes = {"gzip-6 of float32": len(gzip.compress(plain, 6)),
             "gzip-9 of float32": len(gzip.compress(plain, 9)),
             "gzip-6 of shuffled float32": len(gzip.compress(shuffled, 6)),
             "zstd-19 of shuffled float32": len(zstandard.ZstdCompressor(level=19).compress(
                 shuffled))}
    text = ", ".join(f"{k} {v:,} B" for k, v in sizes.items())
    return (f"For reference, other lossless encodings of the same simplenet gradient (not "
            f"codecs of the package): {text}.")


def codec_bench(calls: int, big_calls: int) -> tuple[list[list[str]], str]:
    """Encode/decode time and ratio on real simplenet tensors and a ResNet-18 gradient."""
    torch.manual_seed(0)
    model = simplenet()
    grad = real_gradients(model, 1, range(0, 1))[0]
    rows = codec_rows("simplenet gradient (initial weights, batch 32)", grad, calls)
    rows += codec_rows("simplenet weights (initial)", flat_parameters(model), calls)
    reference = compressibility(grad)
    start = time.perf_counter()
    big = build_model("resnet18", dataset_info("cifar10"), seed=0)
    images, labels = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
    torch.nn.functional.cross_entropy(big(images), labels).backward()
    big_grad = flat_gradients(big)
    cost = time.perf_counter() - start
    del big
    if cost > 30:
        return rows, f"ResNet-18 skipped: its gradient took {cost:.0f} s (> 30 s). {reference}"
    rows += codec_rows("ResNet-18 (GroupNorm) CIFAR gradient, 8 random images", big_grad,
                       big_calls)
    return rows, f"ResNet-18 gradient built and computed in {cost:.1f} s. {reference}"

