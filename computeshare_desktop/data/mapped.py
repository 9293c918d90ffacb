"""Data given from Python: a map-style dataset (``len`` and ``[i]``) read once into an
``ArrayDataset``, the form every session trains on.

Each item is ``(image, label)``: the image a C×H×W (or H×W) tensor or array, float in
[0, 1] or uint8 in 0..255, or a PIL image; the label an int (or a 0-d tensor). Every
image must have the first one's shape. The images are stored as uint8 (a float image is
rounded to the nearest 1/255), the per-channel mean and standard deviation are measured
on the training set, and the classes are the labels 0..max (or the names given). Items
whose first part is 1-D (a tensor, array or list of numbers) are a table's rows instead:
float32, standardized with the training rows' per-feature mean and standard deviation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import torch

from ..errors import ConfigError
from .arrays import ArrayDataset
from .folders import is_folder_spec
from .info import DATASETS, PYTHON_PREFIX, DatasetInfo, table_info
from .tables import is_table_spec

PREFIX = PYTHON_PREFIX  # a session's dataset name when its data came from Python
MIN_STD = 1e-3  # a channel that never changes is scaled as if it varied this much
DIGITS = 6  # mean and std are rounded so: the hub and its workers normalise alike
MAX_NAME = 64


class MapDataset(Protocol):
    """What ``read_dataset`` takes: torch's map-style ``Dataset`` and anything like it."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Any: ...


def python_name(name: str) -> str:
    """The session's dataset name for data given from Python (``python:NAME``)."""
    text = "".join(c if c.isalnum() or c in "-_." else "-" for c in name.strip())
    return PREFIX + (text[:MAX_NAME] or "data")


def dataset_valid(name: str) -> bool:
    """A dataset the registry knows, data given from Python (``python:NAME``), a folder
    of images or a table (PATH.csv, PATH.parquet)."""
    return (name in DATASETS or (name.startswith(PREFIX) and len(name) > len(PREFIX))
            or is_folder_spec(name) or is_table_spec(name))


def read_dataset(dataset: MapDataset, *, name: str, classes: Sequence[str] = (),
                 info: DatasetInfo | None = None, what: str = "train") -> ArrayDataset:
    """Every item of ``dataset`` as one ArrayDataset. ``info``: the training set's (a test
    set must match it); without it the info is measured here.

    Raises:
        ConfigError: an item that is not (image, label), images of different shapes or
            values out of range, a negative label, or one past the classes.
    """
    try:
        count = len(dataset)
    except TypeError:
        raise ConfigError(f"the {what} data needs a length (a map-style Dataset)") from None
    if count < 1:
        raise ConfigError(f"the {what} data is empty")
    if _is_row(_item(dataset, 0, what)[0]):
        images, labels, info = _read_table(dataset, count, name, tuple(classes), info, what)
    else:
        images, labels = _read_items(dataset, count, what)
        if info is None:
            info = _measure(images, labels, name, tuple(classes), what)
        elif tuple(images.shape[1:]) != info.shape:
            raise ConfigError(f"the {what} images are {_shape(images.shape[1:])}, the "
                              f"training images {_shape(info.shape)}")
    top = int(labels.max())
    if top >= info.num_classes:
        raise ConfigError(f"the {what} data has label {top}, past its {info.num_classes} "
                          f"classes")
    return ArrayDataset(images, labels, info)


def hold_out(data: ArrayDataset, fraction: float, seed: int) -> tuple[ArrayDataset,
                                                                        ArrayDataset]:
    """``data`` split into training and test parts (a seeded shuffle; the test part is
    ``fraction`` of it, one sample at least)."""
    count = len(data)
    if count < 2:
        raise ConfigError("one sample cannot be split into training and test data: give "
                          "test= too")
    order = torch.randperm(count, generator=torch.Generator().manual_seed(seed))
    held = min(count - 1, max(1, round(count * fraction)))
    return data.subset(order[held:]), data.subset(order[:held])


def _read_items(dataset: MapDataset, count: int, what: str) -> tuple[torch.Tensor,
                                                                      torch.Tensor]:
    first = _image(_item(dataset, 0, what)[0], 0, what)
    images = torch.empty((count, *first.shape), dtype=torch.uint8)
    labels = torch.empty(count, dtype=torch.int64)
    for i in range(count):
        image, label = _item(dataset, i, what)
        tensor = first if i == 0 else _image(image, i, what)
        if tensor.shape != first.shape:
            raise ConfigError(f"{what} item {i}'s image is {_shape(tensor.shape)}, item 0's "
                              f"{_shape(first.shape)}: every image needs one shape (resize "
                              f"them first)")
        images[i] = tensor
        labels[i] = _label(label, i, what)
    return images, labels


def _item(dataset: MapDataset, i: int, what: str) -> tuple[Any, Any]:
    item = dataset[i]
    if not isinstance(item, (tuple, list)) or len(item) != 2:
        raise ConfigError(f"{what} item {i} is a {type(item).__name__}, not (image, label)")
    return item[0], item[1]


def _image(value: Any, i: int, what: str) -> torch.Tensor:
    """One image as uint8 C×H×W."""
    if hasattr(value, "getbands"):  # a PIL image: H×W or H×W×C
        array = np.asarray(value)
        value = torch.from_numpy(array.copy())
        value = value.permute(2, 0, 1) if value.dim() == 3 else value
    tensor = torch.as_tensor(value).detach().cpu()
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() != 3 or tensor.numel() == 0:
        raise ConfigError(f"{what} item {i}'s image is {_shape(tensor.shape)}: give C×H×W "
                          f"(or H×W)")
    if tensor.dtype == torch.uint8:
        return tensor.contiguous()
    if tensor.is_floating_point():
        low, high = float(tensor.min()), float(tensor.max())
        if not (0.0 <= low and high <= 1.0):  # NaN fails too
            raise ConfigError(f"{what} item {i}'s image has values in [{low:g}, {high:g}]: "
                              f"float images must be in [0, 1] (not normalised yet)")
        return tensor.mul(255).round_().to(torch.uint8).contiguous()
    if tensor.dtype != torch.bool and not tensor.is_complex():
        if int(tensor.min()) >= 0 and int(tensor.max()) <= 255:
            return tensor.to(torch.uint8).contiguous()
    raise ConfigError(f"{what} item {i}'s image is {tensor.dtype}: give float in [0, 1] or "
                      f"uint8")


def _label(value: Any, i: int, what: str) -> int:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    elif isinstance(value, np.ndarray | np.generic) and value.size == 1:
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{what} item {i}'s label is {value!r}: labels are class numbers "
                          f"0, 1, 2...")
    return value


def _measure(images: torch.Tensor, labels: torch.Tensor, name: str, classes: tuple[str, ...],
             what: str) -> DatasetInfo:
    """The training set's info: its shape, classes and per-channel mean and std."""
    count = len(classes) or int(labels.max()) + 1
    if classes and int(labels.max()) >= count:
        raise ConfigError(f"the {what} data has label {int(labels.max())}, past the "
                          f"{count} class names given")
    flat = images.transpose(0, 1).reshape(images.shape[1], -1).to(torch.float64) / 255
    mean = [round(float(m), DIGITS) for m in flat.mean(dim=1)]
    std = [round(max(float(s), MIN_STD), DIGITS) for s in flat.std(dim=1, correction=0)]
    channels, height, width = images.shape[1:]
    return DatasetInfo(name, channels, height, width, count, tuple(mean), tuple(std),
                       tuple(str(c) for c in classes))


def _is_row(value: Any) -> bool:
    """A table's row (a 1-D tensor, array or list of numbers), not an image."""
    if hasattr(value, "getbands"):
        return False
    try:
        return torch.as_tensor(value).dim() == 1
    except (TypeError, ValueError, RuntimeError):
        return False


def _read_table(dataset: MapDataset, count: int, name: str, classes: tuple[str, ...],
                info: DatasetInfo | None, what: str
                ) -> tuple[torch.Tensor, torch.Tensor, DatasetInfo]:
    """Items of (row, label) as a table: the rows standardized with the training rows'
    per-feature mean and std (measured here when ``info`` is None), float32 N×F."""
    first = torch.as_tensor(_item(dataset, 0, what)[0])
    rows = torch.empty((count, first.shape[0]), dtype=torch.float64)
    labels = torch.empty(count, dtype=torch.int64)
    for i in range(count):
        row, label = _item(dataset, i, what)
        value = torch.as_tensor(row).detach().cpu()
        if value.shape != first.shape or value.is_complex() or not value.isfinite().all():
            raise ConfigError(f"{what} item {i}'s row is {_shape(value.shape)}, item 0's "
                              f"{_shape(first.shape)}: every row needs as many finite numbers")
        rows[i], labels[i] = value.to(torch.float64), _label(label, i, what)
    if info is None:
        number = len(classes) or int(labels.max()) + 1
        mean = [round(float(m), DIGITS) for m in rows.mean(dim=0)]
        std = [round(max(float(s), MIN_STD), DIGITS) for s in rows.std(dim=0, correction=0)]
        info = table_info(name, rows.shape[1], number, tuple(mean), tuple(std),
                          tuple(str(c) for c in classes))
    elif info.kind != "table" or info.shape != tuple(first.shape):
        raise ConfigError(f"the {what} rows are {_shape(first.shape)}, the training data "
                          f"{_shape(info.shape)}")
    centre = torch.tensor(info.mean, dtype=torch.float64)
    scale = torch.tensor(info.std, dtype=torch.float64)
    return ((rows - centre) / scale).to(torch.float32).contiguous(), labels, info


def _shape(shape: Sequence[int]) -> str:
    return "×".join(str(d) for d in shape) or "a scalar"

