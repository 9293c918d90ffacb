"""What each dataset looks like (shape, classes, normalisation), without touching any file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch

from computeshare_desktop.errors import ConfigError


DataKind = Literal["images", "table"]


@dataclass(frozen=True, slots=True)
class DatasetInfo:
    """Static description of a dataset: image shape, class count, per-channel mean/std.

    A table (``kind`` "table") has ``channels`` features and ``height`` = ``width`` = 1;
    its ``mean``/``std`` are per feature, measured on the training split, and its
    ``ArrayDataset`` holds the features already standardized with them: ``normalize`` is
    then the identity, and the statistics serve the exported model, which takes raw values.
    """

    name: str
    channels: int
    height: int
    width: int
    num_classes: int
    mean: tuple[float, ...]  # per channel, for images scaled to [0, 1]; per feature (table)
    std: tuple[float, ...]
    classes: tuple[str, ...] = ()  # the class names in label order (empty: unnamed)
    kind: DataKind = "images"
    # a table's feature names, COLUMN or COLUMN=VALUE (a one-hot text column); empty: unnamed
    features: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.channels < 1:
            raise ValueError(f"{self.name}: a sample needs a channel or a feature")
        if len(self.mean) != self.channels or len(self.std) != self.channels:
            raise ValueError(f"{self.name}: mean/std need one value per channel")
        if min(self.std) <= 0:
            raise ValueError(f"{self.name}: std must be positive")
        if self.classes and len(self.classes) != self.num_classes:
            raise ValueError(f"{self.name}: {len(self.classes)} class names for "
                             f"{self.num_classes} classes")
        if self.kind == "table" and (self.height, self.width) != (1, 1):
            raise ValueError(f"{self.name}: a table's height and width are 1")
        if self.features and len(self.features) != self.channels:
            raise ValueError(f"{self.name}: {len(self.features)} feature names for "
                             f"{self.channels} features")

    @property
    def class_names(self) -> tuple[str, ...]:
        """The name of each class in output order: its own, else its index as text."""
        return self.classes or tuple(str(i) for i in range(self.num_classes))

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of one sample: (C, H, W) for an image, (F,) for a table's row."""
        if self.kind == "table":
            return (self.channels,)
        return (self.channels, self.height, self.width)

    @property
    def in_features(self) -> int:
        """A table's number of features (columns after encoding); 0 for images."""
        return self.channels if self.kind == "table" else 0


def table_info(name: str, features: int, num_classes: int, mean: tuple[float, ...] = (),
               std: tuple[float, ...] = (), classes: tuple[str, ...] = (),
               names: tuple[str, ...] = ()) -> DatasetInfo:
    """A table's info; without statistics, the identity (0 and 1: what a worker, handed
    standardized rows, needs)."""
    return DatasetInfo(name, features, 1, 1, num_classes, mean or (0.0,) * features,
                       std or (1.0,) * features, classes, kind="table", features=names)


def wire_shape(info: DatasetInfo) -> dict[str, Any]:
    """How a Welcome describes one sample (its fields by name). A table's rows reach
    workers standardized: its statistics stay on the hub, and the Welcome says 1×1×1 with
    mean 0 and std 1, the identity, beside the kind and the row's length."""
    if info.kind == "table":
        return {"channels": 1, "height": 1, "width": 1, "mean": [0.0], "std": [1.0],
                "data_kind": "table", "features": info.channels}
    return {"channels": info.channels, "height": info.height, "width": info.width,
            "mean": list(info.mean), "std": list(info.std)}


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
PYTHON_PREFIX = "python:"  # the name of data given from Python (``mapped.python_name``)


def dataset_info(name: str) -> DatasetInfo:
    """Return the info of a dataset by name; no I/O. Raises ConfigError for unknown names."""
    try:
        return _INFOS[name]
    except KeyError:
        if name.startswith(PYTHON_PREFIX):
            raise ConfigError(f"{name} is data that was handed to host() from Python, which "
                              f"was never on disk: name the data with --dataset (a folder "
                              f"of images, a table, a built-in dataset)") from None
        raise ConfigError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}") from None


def normalize(images_uint8: torch.Tensor, info: DatasetInfo) -> torch.Tensor:
    """Return float32 ``(x / 255 - mean) / std`` per channel, on the tensor's own device.

    Accepts (C, H, W) or (N, C, H, W) uint8 tensors; raises TypeError/ValueError otherwise.
    A table's rows (float32 (F,) or (N, F)) are standardized already: returned as they are.
    """
    if info.kind == "table":
        _check_rows(images_uint8, info)
        return images_uint8
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


def raw_inputs(samples: torch.Tensor, info: DatasetInfo) -> torch.Tensor:
    """What an exported model takes for these stored samples: images as float32 in [0, 1],
    a table's rows back in their own units (``x * std + mean``)."""
    if info.kind != "table":
        return samples.to(torch.float32).div_(255.0)
    _check_rows(samples, info)
    mean = torch.tensor(info.mean, dtype=torch.float32, device=samples.device)
    std = torch.tensor(info.std, dtype=torch.float32, device=samples.device)
    return samples * std + mean


def _check_rows(rows: torch.Tensor, info: DatasetInfo) -> None:
    if rows.dtype != torch.float32:
        raise TypeError(f"a table's rows are float32, got {rows.dtype}")
    if rows.dim() not in (1, 2) or rows.shape[-1] != info.channels:
        raise ValueError(f"expects (N,) {info.channels} features, got {tuple(rows.shape)}")
