"""An in-memory dataset: all images as one uint8 tensor (a table: all rows as one float32
tensor), all labels as one int64 tensor."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from computeshare_desktop.data.info import DatasetInfo


@dataclass(frozen=True, slots=True, eq=False)
class ArrayDataset:
    """Images (N, C, H, W) uint8 contiguous, labels (N,) int64, and the dataset's info.
    For a table, ``images`` holds its rows: float32 (N, F), standardized (``DatasetInfo``).

    Tensors returned by ``load_dataset`` are shared with its in-memory cache: treat them as
    read-only (clone before any in-place change). ``subset`` always returns fresh copies.
    """

    images: torch.Tensor
    labels: torch.Tensor
    info: DatasetInfo

    def __post_init__(self) -> None:
        table = self.info.kind == "table"
        dtype, dims = (torch.float32, 2) if table else (torch.uint8, 4)
        if self.images.dtype != dtype or self.images.dim() != dims:
            shape = tuple(self.images.shape)
            wanted = "float32 N×F rows" if table else "uint8 N×C×H×W images"
            raise ValueError(f"{self.info.name} needs {wanted}, got {self.images.dtype} "
                             f"{shape}")
        if tuple(self.images.shape[1:]) != self.info.shape:
            shape = tuple(self.images.shape[1:])
            raise ValueError(f"images are {shape}, {self.info.name} is {self.info.shape}")
        if not self.images.is_contiguous():
            raise ValueError("images must be contiguous")
        if self.labels.dtype != torch.int64 or self.labels.shape != (self.images.shape[0],):
            raise ValueError(f"labels must be int64 of shape ({self.images.shape[0]},)")

    def __len__(self) -> int:
        """Number of examples."""
        return int(self.labels.shape[0])

    def subset(self, indices: torch.Tensor) -> ArrayDataset:
        """Return the examples at ``indices`` (int64 positions or a bool mask) as new tensors."""
        indices = torch.as_tensor(indices)
        if indices.dim() != 1:
            raise ValueError(f"indices must be 1-D, got shape {tuple(indices.shape)}")
        if indices.dtype != torch.bool:
            indices = indices.to(torch.int64)
        images = self.images[indices].contiguous()
        return ArrayDataset(images, self.labels[indices].clone(), self.info)


def mapped_splits(samples: Path, labels: Path, info: DatasetInfo, train: int,
                  test: int) -> tuple[ArrayDataset, ArrayDataset] | None:
    """A prepared cache's two splits, memory-mapped (copy on write) from its files: the
    samples (uint8 images, or a table's float32 rows), the training split's first, and
    the int64 labels; None when the files do not hold them."""
    dtype = np.float32 if info.kind == "table" else np.uint8
    try:
        values = np.memmap(samples, dtype=dtype, mode="c", shape=(train + test, *info.shape))
        numbers = np.fromfile(labels, dtype=np.int64)
    except (OSError, ValueError):
        return None
    if numbers.shape != (train + test,):
        return None
    data, targets = torch.from_numpy(values), torch.from_numpy(numbers)
    return (ArrayDataset(data[:train], targets[:train], info),
            ArrayDataset(data[train:], targets[train:], info))
