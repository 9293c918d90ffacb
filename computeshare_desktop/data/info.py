"""What each dataset looks like (shape, classes, normalisation), without touching any file."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from computeshare_desktop.errors import ConfigError


@dataclass(frozen=True, slots=True)
class DatasetInfo:
    """Static description of a dataset: image shape, class count, per-channel mean/std."""

    name: str
    channels: int
    height: int
    width: int
    num_classes: int
    mean: tuple[float, ...]  # per channel, for images scaled to [0, 1]
    std: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.mean) != self.channels or len(self.std) != self.channels:
            raise ValueError(f"{self.name}: mean/std need one value per channel")
        if min(self.std) <= 0:
            raise ValueError(f"{self.name}: std must be positive")

    @property
    def shape(self) -> tuple[int, int, int]:
        """The (C, H, W) shape of one image."""
        return (self.channels, self.height, self.width)


def _gray(name: str, num_classes: int, mean: float, std: float) -> DatasetInfo:
    return DatasetInfo(name, 1, 28, 28, num_classes, (mean,), (std,))


def _rgb(
    name: str, num_classes: int, mean: tuple[float, float, float], std: tuple[float, float, float]
) -> DatasetInfo:
    return DatasetInfo(name, 3, 32, 32, num_classes, mean, std)


# Published per-channel statistics of each train split; mnist-sample's come from its own
# train split (scripts/build_mnist_sample.py prints them, a test checks them).
_INFOS: dict[str, DatasetInfo] = {
    info.name: info
    for info in (
        _gray("mnist-sample", 10, 0.1315, 0.3088),
        _gray("mnist", 10, 0.1307, 0.3081),
        _gray("fashion-mnist", 10, 0.2860, 0.3530),
        _gray("kmnist", 10, 0.1918, 0.3483),
        _gray("emnist", 47, 0.1751, 0.3332),  # the "balanced" split
        _rgb("cifar10", 10, (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
        _rgb("cifar100", 100, (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
        _rgb("svhn", 10, (0.4377, 0.4438, 0.4728), (0.1980, 0.2010, 0.1970)),
    )
}

DATASETS: tuple[str, ...] = tuple(_INFOS)


def dataset_info(name: str) -> DatasetInfo:
    """Return the info of a dataset by name; no I/O. Raises ConfigError for unknown names."""
    try:
        return _INFOS[name]
    except KeyError:
        raise ConfigError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}") from None


def normalize(images_uint8: torch.Tensor, info: DatasetInfo) -> torch.Tensor:
    """Return float32 ``(x / 255 - mean) / std`` per channel, on the tensor's own device.

    Accepts (C, H, W) or (N, C, H, W) uint8 tensors; raises TypeError/ValueError otherwise.
    """
    if images_uint8.dtype != torch.uint8:
        raise TypeError(f"normalize expects uint8 images, got {images_uint8.dtype}")
    if images_uint8.dim() not in (3, 4) or images_uint8.shape[-3] != info.channels:
        raise ValueError(
            f"normalize expects (N,) {info.channels}×H×W images, got {tuple(images_uint8.shape)}"
        )
    device = images_uint8.device
    mean = torch.tensor(info.mean, dtype=torch.float32, device=device).view(-1, 1, 1)
    std = torch.tensor(info.std, dtype=torch.float32, device=device).view(-1, 1, 1)
    out = images_uint8.to(torch.float32).div_(255.0)
    return out.sub_(mean).div_(std)
