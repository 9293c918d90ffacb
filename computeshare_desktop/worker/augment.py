"""Augmentation on the worker: random changes to each training batch, drawn per sample.

The hub sends each sample once (the shard); the worker changes the uint8 batch on its own
device after sampling it and before ``normalize``, so augmentation costs no bytes. The hub's
evaluation never augments. The ops, applied in ``AUGMENTS``' order whatever the order asked:

- ``crop``: pad by an eighth of the side (reflected borders) and crop back at the same size
  at a random offset, i.e. a random shift of up to 1/8 of the side. Chosen over a
  random-resized crop: the objects keep the scale the hub's test images have (no train/test
  scale gap), the pixels stay exact uint8 (no interpolation), and it is one gather per batch.
- ``flip``: mirror left-right with probability 1/2.
- ``rotate``: turn by up to ``MAX_DEGREES`` either way (bilinear, reflected borders).
- ``color``: brightness and contrast times a factor in [1 - JITTER, 1 + JITTER]; on 3
  channels saturation too (ColorJitter's, without hue, in one pass).
- ``erase``: with probability 1/2, a box of 2-25% of the image (aspect 0.3-3.3) takes the
  dataset's mean colour (zero once normalized), as RandomErasing.

torchvision.transforms.v2 draws one set of parameters per call, so on a batch every sample
is flipped or none, and every sample loses the same box (checked on torch 2.14.1 /
torchvision 0.29.1); calling it per sample costs ~25x more. So each op here is a batched
tensor op with per-sample parameters (tests compare them with v2's kernels). The
parameters come from a CPU generator seeded by the session's seed, the shard and the
batch's place in the shard's stream (``batch_generator``): a run is reproducible, and a
worker that takes over a shard draws what its predecessor would have.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..data import DatasetInfo
from ..errors import RejectedError
from ..protocol import RejectCode
from ..protocol.messages import AUGMENTS

log = logging.getLogger(__name__)
MAX_DEGREES = 10.0
JITTER = 0.4  # brightness, contrast and saturation factors in [0.6, 1.4]
ERASE_AREA = (0.02, 0.25)
ERASE_RATIO = (0.3, 3.3)
LUMA = (0.299, 0.587, 0.114)  # what torchvision's rgb_to_grayscale weighs RGB with
_TAG = 0xA06  # keeps augmentation's random stream apart from the sampling's

Op = Callable[[torch.Tensor, torch.Generator, DatasetInfo], torch.Tensor]


def checked(names: Sequence[str]) -> tuple[str, ...]:
    """The hub's augmentation words in the order they are applied.

    Raises:
        RejectedError(MALFORMED): a word this worker does not know (a newer hub's).
    """
    unknown = [n for n in names if n not in OPS]
    if unknown:
        raise RejectedError(RejectCode.MALFORMED, f"the hub asks for augmentation "
                            f"{unknown[0][:40]!r}, which this ComputeShare does not have "
                            f"(it has {', '.join(AUGMENTS)}): update ComputeShare")
    return tuple(n for n in AUGMENTS if n in names)


def batch_generator(seed: int, shard: int, start: int) -> torch.Generator:
    """The CPU generator of the batch at ``start`` in ``shard``'s stream."""
    words = [_TAG, seed & 0xFFFFFFFF, seed >> 32 & 0xFFFFFFFF, shard, start]
    state = np.random.SeedSequence(words).generate_state(2, np.uint32)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


class Augmentation:
    """The session's ops, applied to uint8 (N, C, H, W) batches on their own device."""

    def __init__(self, names: Sequence[str], info: DatasetInfo) -> None:
        """RejectedError(MALFORMED): an op this worker does not know, or any for a table."""
        self.names = checked(names)
        self.info = info
        if self.names and info.kind == "table":
            raise RejectedError(RejectCode.MALFORMED, "the hub asks to augment a table's "
                                                      "rows: only images are augmented")
        if self.names:
            log.info("augmenting each training batch here: %s", ",".join(self.names))

    def __bool__(self) -> bool:
        return bool(self.names)

    def __call__(self, images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """``images`` changed per sample, same shape, dtype and device."""
        if not self.names or len(images) == 0:
            return images
        for name in self.names:
            images = OPS[name](images, generator, self.info)
        return images


def _uniform(n: int, low: float, high: float, g: torch.Generator,
             device: torch.device) -> torch.Tensor:
    """``n`` floats in [low, high), drawn on the CPU (the same on every device)."""
    return (torch.rand(n, generator=g) * (high - low) + low).to(device)


def _to_uint8(x: torch.Tensor) -> torch.Tensor:
    return x.round_().clamp_(0, 255).to(torch.uint8)


def _reflect(index: torch.Tensor, size: int) -> torch.Tensor:
    """Positions outside [0, size) mirrored back in (without repeating the edge)."""
    if size < 2:
        return index.clamp(0, size - 1)
    period = 2 * (size - 1)
    index = index.abs() % period
    return torch.where(index >= size, period - index, index)


def crop(x: torch.Tensor, g: torch.Generator, info: DatasetInfo) -> torch.Tensor:
    """A random shift of up to 1/8 of the side, borders reflected (pad and crop)."""
    n, c, h, w = x.shape
    pad = max(1, min(h, w) // 8)
    shift = torch.randint(-pad, pad + 1, (2, n), generator=g).to(x.device)
    rows = _reflect(torch.arange(h, device=x.device) + shift[0, :, None], h)
    cols = _reflect(torch.arange(w, device=x.device) + shift[1, :, None], w)
    # one gather over the flattened image (6x faster than indexing rows and columns)
    index = (rows[:, :, None] * w + cols[:, None, :]).view(n, 1, h * w).expand(n, c, h * w)
    return x.reshape(n, c, h * w).gather(2, index).view(n, c, h, w)


def flip(x: torch.Tensor, g: torch.Generator, info: DatasetInfo) -> torch.Tensor:
    """Half of the samples mirrored left-right."""
    chosen = (torch.rand(len(x), generator=g) < 0.5).to(x.device)
    return torch.where(chosen[:, None, None, None], x.flip(-1), x)


def rotate(x: torch.Tensor, g: torch.Generator, info: DatasetInfo) -> torch.Tensor:
    """Each sample turned by up to MAX_DEGREES either way about its centre."""
    n, _, h, w = x.shape
    angle = _uniform(n, -MAX_DEGREES, MAX_DEGREES, g, x.device) * (math.pi / 180)
    cos, sin = angle.cos(), angle.sin()
    zero = torch.zeros_like(cos)
    # affine_grid works in [-1, 1] on both axes: the aspect enters a non-square turn
    theta = torch.stack([torch.stack([cos, -sin * h / w, zero], 1),
                         torch.stack([sin * w / h, cos, zero], 1)], 1)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    turned = F.grid_sample(x.float(), grid, mode="bilinear", padding_mode="reflection",
                           align_corners=False)
    return _to_uint8(turned)


def _gray(x: torch.Tensor) -> torch.Tensor:
    """(N, 1, H, W) grey levels: luma for RGB, else the channels' mean."""
    if x.shape[1] == 3:
        weights = torch.tensor(LUMA, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
        return (x * weights).sum(1, keepdim=True)
    return x.mean(1, keepdim=True)


def color(x: torch.Tensor, g: torch.Generator, info: DatasetInfo) -> torch.Tensor:
    """Brightness and contrast (and saturation on 3 channels) jittered per sample.

    The three are linear, so they are applied as one: with factors b, c, s, grey g and
    mean grey m, b * (s c x + (1 - s) c g + (1 - c) m), clamped once at the end (ColorJitter
    clamps after each step: the same wherever no step leaves [0, 255]; 3x fewer passes)."""
    n = len(x)
    b, c, s = _uniform(3 * n, 1 - JITTER, 1 + JITTER, g, x.device).view(3, n, 1, 1, 1)
    out = x.float()
    gray = _gray(out)
    shift = gray.mean((1, 2, 3), keepdim=True).mul_(b * (1 - c))
    if x.shape[1] == 3:
        out.mul_(b * s * c).add_(gray.mul_(b * (1 - s) * c))
    else:
        out.mul_(b * c)
    return _to_uint8(out.add_(shift))


def erase(x: torch.Tensor, g: torch.Generator, info: DatasetInfo) -> torch.Tensor:
    """Half of the samples lose a random box to the dataset's mean colour."""
    n, c, h, w = x.shape
    draws = torch.rand(5, n, generator=g)
    area = (draws[0] * (ERASE_AREA[1] - ERASE_AREA[0]) + ERASE_AREA[0]) * h * w
    low, high = math.log(ERASE_RATIO[0]), math.log(ERASE_RATIO[1])
    ratio = torch.exp(draws[1] * (high - low) + low)
    bh = (area * ratio).sqrt().round().clamp(1, h).long()
    bw = (area / ratio).sqrt().round().clamp(1, w).long()
    top = (draws[2] * (h - bh + 1)).long()
    left = (draws[3] * (w - bw + 1)).long()
    chosen = draws[4] < 0.5
    r, col = torch.arange(h), torch.arange(w)
    in_rows = (r >= top[:, None]) & (r < (top + bh)[:, None])
    in_cols = (col >= left[:, None]) & (col < (left + bw)[:, None])
    box = (in_rows[:, :, None] & in_cols[:, None, :] & chosen[:, None, None]).to(x.device)
    fill = torch.tensor([round(m * 255) for m in info.mean], dtype=torch.uint8,
                        device=x.device).view(1, c, 1, 1)
    return torch.where(box[:, None], fill, x)


OPS: dict[str, Op] = {"crop": crop, "flip": flip, "rotate": rotate, "color": color,
                      "erase": erase}

assert tuple(OPS) == AUGMENTS, "every augmentation word needs its op, in the same order"
