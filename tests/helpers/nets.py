"""Small nets and a dataset of 1×12×12 images in three classes, written as a user would
(classes no one on the project wrote), for tests that train them."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import Dataset


class BandNet(nn.Module):
    """One convolution and a linear head for 1×12×12 images in three classes."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.head = nn.Linear(4 * 12 * 12, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).flatten(1))


class TinyNet(nn.Module):
    """A class no one on the project wrote: it can only reach workers as a graph."""

    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.norm = nn.BatchNorm2d(4)
        self.head = nn.Linear(4 * 12 * 12, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.norm(self.conv(x))).flatten(1))


class Stripes(Dataset):
    """1×12×12 images in [0, 1]: noise plus a bright band whose row says the class."""

    def __init__(self, count: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 3, (count,), generator=g)
        self.images = torch.rand(count, 1, 12, 12, generator=g) * 0.4
        for i, label in enumerate(self.labels.tolist()):
            self.images[i, 0, 4 * label:4 * label + 4] += 0.6

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return self.images[i], int(self.labels[i])
