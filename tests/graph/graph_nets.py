"""Models for the graph tests, written as a user would, and helpers on a graph's JSON."""

from __future__ import annotations

import copy
import json
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class Residual(nn.Module):
    """Two 3x3 convolutions with batch norm and GELU around a skip connection."""

    def __init__(self, channels: int, stride: int = 1) -> None:
        super().__init__()
        wide = channels * stride
        self.conv_a = nn.Conv2d(channels, wide, 3, stride, 1, bias=False)
        self.norm_a = nn.BatchNorm2d(wide)
        self.conv_b = nn.Conv2d(wide, wide, 3, 1, 1, bias=False)
        self.norm_b = nn.BatchNorm2d(wide)
        self.skip = nn.Identity() if stride == 1 else nn.Sequential(
            nn.Conv2d(channels, wide, 1, stride, bias=False), nn.BatchNorm2d(wide))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.gelu(self.norm_a(self.conv_a(x)))
        return F.gelu(self.norm_b(self.conv_b(y)) + self.skip(x))


class TinyResNet(nn.Module):
    """A stranger's network: residual stages, batch norm, GELU, dropout before the head,
    a constant made in forward and a non-persistent buffer."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_channels, 8, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(8), nn.GELU())
        self.stages = nn.Sequential(Residual(8), Residual(8, stride=2))
        self.dropout = nn.Dropout(0.25)
        self.head = nn.Linear(16, num_classes)
        self.register_buffer("temperature", torch.tensor(2.0), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x))
        x = x.mean(dim=(2, 3)) * torch.tensor([1.0, 0.5] * 8)
        return self.head(self.dropout(x)) / self.temperature


def tiny_resnet(seed: int = 0) -> TinyResNet:
    torch.manual_seed(seed)
    return TinyResNet().train()


def as_tree(program: bytes) -> dict[str, Any]:
    return json.loads(program)


def as_bytes(tree: dict[str, Any]) -> bytes:
    return json.dumps(tree).encode()


def edited(program: bytes, edit: Any) -> bytes:
    """The program after ``edit(tree)`` changed a copy of its JSON."""
    tree = copy.deepcopy(as_tree(program))
    edit(tree)
    return as_bytes(tree)


def graph_of(tree: dict[str, Any]) -> dict[str, Any]:
    return tree["graph_module"]["graph"]


def first_node(tree: dict[str, Any], target: str) -> dict[str, Any]:
    return next(n for n in graph_of(tree)["nodes"] if n["target"] == target)
