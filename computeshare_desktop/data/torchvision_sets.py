"""Adapters from torchvision's dataset classes to uniform uint8 N×C×H×W arrays.

torchvision's classes differ in how a split is chosen (``train=`` or ``split=``) and in what
they hold (``.data`` as a torch N×H×W tensor, a numpy N×H×W×3 or N×3×H×W array; ``.targets``
or ``.labels``). The arrays are read directly: per-item transforms are far too slow.
"""

from __future__ import annotations

import logging
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import torch

from computeshare_desktop.data.arrays import ArrayDataset
from computeshare_desktop.data.info import dataset_info
from computeshare_desktop.errors import DatasetUnavailableError

logger = logging.getLogger(__name__)

# (root, train, download) -> a torchvision dataset instance
Maker = Callable[[str, bool, bool], Any]


class Layout(Enum):
    """How a torchvision dataset stores its ``.data``."""

    NHW = "nhw"  # grayscale, torch tensor (MNIST, FashionMNIST, KMNIST)
    NWH = "nwh"  # grayscale stored transposed (EMNIST)
    NHWC = "nhwc"  # numpy, channels last (CIFAR)
    NCHW = "nchw"  # numpy, channels first (SVHN)


@dataclass(frozen=True, slots=True)
class Source:
    """How to build one torchvision dataset and read its arrays."""

    make: Maker
    layout: Layout


def _tv() -> Any:
    """Import torchvision.datasets lazily: it is slow and only needed for these sets."""
    import torchvision.datasets

    return torchvision.datasets


SOURCES: dict[str, Source] = {
    "mnist": Source(lambda r, t, d: _tv().MNIST(r, train=t, download=d), Layout.NHW),
    "fashion-mnist": Source(lambda r, t, d: _tv().FashionMNIST(r, train=t, download=d), Layout.NHW),
    "kmnist": Source(lambda r, t, d: _tv().KMNIST(r, train=t, download=d), Layout.NHW),
    "emnist": Source(
        lambda r, t, d: _tv().EMNIST(r, split="balanced", train=t, download=d), Layout.NWH
    ),
    "cifar10": Source(lambda r, t, d: _tv().CIFAR10(r, train=t, download=d), Layout.NHWC),
    "cifar100": Source(lambda r, t, d: _tv().CIFAR100(r, train=t, download=d), Layout.NHWC),
    "svhn": Source(
        lambda r, t, d: _tv().SVHN(r, split="train" if t else "test", download=d), Layout.NCHW
    ),
}


def to_nchw(data: Any, layout: Layout) -> torch.Tensor:
    """Convert a torchvision ``.data`` array to a contiguous uint8 N×C×H×W tensor."""
    images = torch.as_tensor(np.asarray(data) if not isinstance(data, torch.Tensor) else data)
    if layout is Layout.NHW:
        images = images.unsqueeze(1)
    elif layout is Layout.NWH:
        images = images.transpose(1, 2).unsqueeze(1)
    elif layout is Layout.NHWC:
        images = images.permute(0, 3, 1, 2)
    return images.to(torch.uint8).contiguous()


def _labels(dataset: Any) -> torch.Tensor:
    raw = dataset.targets if hasattr(dataset, "targets") else dataset.labels
    if isinstance(raw, torch.Tensor):
        return raw.to(torch.int64).contiguous()
    return torch.from_numpy(np.asarray(raw, dtype=np.int64).copy())


def unavailable(name: str, root: pathlib.Path, download: bool) -> DatasetUnavailableError:
    """Return the one-line error that names the ways out."""
    reason = "could not be downloaded (offline?)" if download else "downloading is disabled"
    return DatasetUnavailableError(
        f"dataset {name!r} is not in {root} and {reason}: connect once to download it, copy "
        f"the files there (or set COMPUTESHARE_DATA_DIR), or use --dataset mnist-sample"
    )


def _make(source: Source, name: str, root: str, train: bool, download: bool) -> Any:
    """Build from the cache; go to the network only when that fails and downloads are allowed."""
    try:
        return source.make(root, train, False)
    except RuntimeError:
        if not download:
            raise
    logger.info("downloading %s into %s", name, root)
    return source.make(root, train, True)


def load_torchvision(name: str, split: str, root: pathlib.Path, download: bool) -> ArrayDataset:
    """Load one split of a torchvision dataset from ``root``, downloading it if allowed."""
    source = SOURCES[name]
    logger.info("loading %s %s from %s (download=%s)", name, split, root, download)
    try:
        dataset = _make(source, name, str(root), split == "train", download)
    except ImportError as exc:  # SVHN reads .mat files with scipy
        package = (exc.name or "scipy").split(".")[0]
        raise DatasetUnavailableError(
            f"dataset {name!r} needs the {package} package: pip install {package}"
        ) from exc
    except (RuntimeError, OSError) as exc:  # URLError is an OSError
        logger.debug("torchvision could not provide %s: %s", name, exc)
        raise unavailable(name, root, download) from exc
    images = to_nchw(dataset.data, source.layout)
    return ArrayDataset(images, _labels(dataset), dataset_info(name))
