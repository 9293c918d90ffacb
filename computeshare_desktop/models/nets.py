"""The network architectures: small CNN, MLP and a GroupNorm ResNet-18 for small images."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from computeshare_desktop.data import DatasetInfo
from computeshare_desktop.errors import ConfigError

GROUP_NORM_GROUPS = 32
MAX_MAP = 5  # simplenet's largest map before fc1: CIFAR's, at 32 px
MAX_MLP_SIDE = 32  # mlp averages larger images down to this side: CIFAR's, at 32 px


class SimpleNet(nn.Module):
    """The classic PyTorch MNIST example CNN without dropout; returns logits. Images whose
    map after the two conv/pool stages is larger than 5×5 (over 32 px) are averaged down to
    5×5 before fc1, so fc1 has at most 500 inputs at any size."""

    def __init__(self, info: DatasetInfo) -> None:
        super().__init__()
        height, width = _after_two_conv_pool(info.height), _after_two_conv_pool(info.width)
        if height < 1 or width < 1:
            raise ConfigError(f"simplenet needs images of at least 16×16; {info.name}'s are "
                              f"{info.width}×{info.height}: use --image-size 16 (or more), "
                              f"or --model mlp, which takes any size")
        # A larger map is averaged down to MAX_MAP×MAX_MAP (no parameters): fc1 of 20*h*w
        # inputs (56,180 at 224 px) made SGD at the default rate blow up; MNIST's 4×4 and
        # CIFAR's 5×5 maps are left exactly as they were.
        self.pooled = (min(height, MAX_MAP), min(width, MAX_MAP))
        self.conv1 = nn.Conv2d(info.channels, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.fc1 = nn.Linear(20 * self.pooled[0] * self.pooled[1], 50)
        self.fc2 = nn.Linear(50, info.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map normalised N×C×H×W images to N×num_classes logits."""
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        if tuple(x.shape[-2:]) != self.pooled:
            x = F.adaptive_avg_pool2d(x, self.pooled)
        logits: torch.Tensor = self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))
        return logits


def _after_two_conv_pool(size: int) -> int:
    """Spatial size after two (5×5 valid conv, 2×2 max pool) stages."""
    return ((size - 4) // 2 - 4) // 2


class MLP(nn.Module):
    """Flatten, then 256 → ReLU → 128 → ReLU → logits: images of any size, or a table's
    rows of any number of features. Images over MAX_MLP_SIDE px a side are averaged down
    to it first (fc1 had 150,528 inputs at 224 px, and SGD at the default rate went to
    NaN); MNIST's 28 px and CIFAR's 32 px are left exactly as they were."""

    def __init__(self, info: DatasetInfo) -> None:
        super().__init__()
        self.side = (min(info.height, MAX_MLP_SIDE), min(info.width, MAX_MLP_SIDE))
        inputs = info.channels * self.side[0] * self.side[1]  # a table: F × 1 × 1
        self.fc1 = nn.Linear(inputs, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, info.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map normalised N×C×H×W images (or N×F rows) to N×num_classes logits."""
        if x.dim() == 4 and tuple(x.shape[-2:]) != self.side:
            x = F.adaptive_avg_pool2d(x, self.side)
        hidden = F.relu(self.fc2(F.relu(self.fc1(torch.flatten(x, 1)))))
        logits: torch.Tensor = self.fc3(hidden)
        return logits


def group_norm(channels: int) -> nn.GroupNorm:
    """GroupNorm with 32 groups (Wu & He), or the largest divisor of ``channels`` below it."""
    return nn.GroupNorm(math.gcd(GROUP_NORM_GROUPS, channels), channels)


def resnet18(info: DatasetInfo) -> nn.Module:
    """torchvision's ResNet-18 for small images, with GroupNorm instead of BatchNorm.

    The stem is a 3×3 stride-1 conv and the max pool is removed, as usual for 32×32 inputs.
    GroupNorm is deliberate: the model then has no buffers (no running statistics), so the
    parameter server only has to average parameter gradients to keep every replica identical,
    and its normalisation does not depend on the small per-worker batch size. It is the
    standard choice for data-parallel and federated training with small local batches.
    """
    from torchvision.models import resnet18 as tv_resnet18

    model: nn.Module = tv_resnet18(
        weights=None, num_classes=info.num_classes, norm_layer=group_norm
    )
    stem = nn.Conv2d(info.channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
    nn.init.kaiming_normal_(stem.weight, mode="fan_out", nonlinearity="relu")  # as torchvision
    model.conv1 = stem
    model.maxpool = nn.Identity()
    return model
