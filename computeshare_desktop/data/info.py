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
    classes: tuple[str, ...] = ()  # the class names in label order (empty: unnamed)

    def __post_init__(self) -> None:
        if len(self.mean) != self.channels or len(self.std) != self.channels:
            raise ValueError(f"{self.name}: mean/std need one value per channel")
        if min(self.std) <= 0:
            raise ValueError(f"{self.name}: std must be positive")
        if self.classes and len(self.classes) != self.num_classes:
            raise ValueError(f"{self.name}: {len(self.classes)} class names for "
                             f"{self.num_classes} classes")

    @property
    def class_names(self) -> tuple[str, ...]:
        """The name of each class in output order: its own, else its index as text."""
        return self.classes or tuple(str(i) for i in range(self.num_classes))

    @property
    def shape(self) -> tuple[int, int, int]:
        """The (C, H, W) shape of one image."""
        return (self.channels, self.height, self.width)


def _gray(name: str, classes: tuple[str, ...], mean: float, std: float) -> DatasetInfo:
    return DatasetInfo(name, 1, 28, 28, len(classes), (mean,), (std,), classes)


def _rgb(
    name: str, classes: tuple[str, ...], mean: tuple[float, float, float],
    std: tuple[float, float, float]
) -> DatasetInfo:
    return DatasetInfo(name, 3, 32, 32, len(classes), mean, std, classes)


# Each set's class names in label order, as torchvision names them (``MNIST.classes`` and
# the like; CIFAR's come from its data files, so they are written out here: no file is
# read). tests/data/test_class_names.py compares them with torchvision's where it has them.
DIGITS = tuple("0123456789")
MNIST_CLASSES = ("0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
                 "6 - six", "7 - seven", "8 - eight", "9 - nine")
FASHION_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                   "Sneaker", "Bag", "Ankle boot")
KMNIST_CLASSES = ("o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo")
# EMNIST "balanced": digits, capitals, and the lower-case letters not merged into capitals
EMNIST_CLASSES = (*DIGITS, *"ABCDEFGHIJKLMNOPQRSTUVWXYZ", *"abdefghnqrt")
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                   "ship", "truck")
CIFAR100_CLASSES = tuple("""
apple aquarium_fish baby bear beaver bed bee beetle bicycle bottle bowl boy bridge bus
butterfly camel can castle caterpillar cattle chair chimpanzee clock cloud cockroach couch
crab crocodile cup dinosaur dolphin elephant flatfish forest fox girl hamster house kangaroo
keyboard lamp lawn_mower leopard lion lizard lobster man maple_tree motorcycle mountain mouse
mushroom oak_tree orange orchid otter palm_tree pear pickup_truck pine_tree plain plate poppy
porcupine possum rabbit raccoon ray road rocket rose sea seal shark shrew skunk skyscraper
snail snake spider squirrel streetcar sunflower sweet_pepper table tank telephone television
tiger tractor train trout tulip turtle wardrobe whale willow_tree wolf woman worm
""".split())


# Published per-channel statistics of each train split; mnist-sample's come from its own
# train split (scripts/build_mnist_sample.py prints them, a test checks them).
_INFOS: dict[str, DatasetInfo] = {
    info.name: info
    for info in (
        _gray("mnist-sample", DIGITS, 0.1315, 0.3088),
        _gray("mnist", MNIST_CLASSES, 0.1307, 0.3081),
        _gray("fashion-mnist", FASHION_CLASSES, 0.2860, 0.3530),
        _gray("kmnist", KMNIST_CLASSES, 0.1918, 0.3483),
        _gray("emnist", EMNIST_CLASSES, 0.1751, 0.3332),  # the "balanced" split
        _rgb("cifar10", CIFAR10_CLASSES, (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
        _rgb("cifar100", CIFAR100_CLASSES, (0.5071, 0.4865, 0.4409),
             (0.2673, 0.2564, 0.2762)),
        _rgb("svhn", DIGITS, (0.4377, 0.4438, 0.4728), (0.1980, 0.2010, 0.1970)),  # 10 is "0"
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
