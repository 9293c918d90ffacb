"""``load_dataset``: one entry point for every dataset, with an in-memory cache."""

from __future__ import annotations

import logging
import os
import pathlib
import threading
from typing import Callable

import platformdirs

from computeshare_desktop.data.arrays import ArrayDataset
from computeshare_desktop.data.info import dataset_info
from computeshare_desktop.data.sample import NAME as SAMPLE_NAME
from computeshare_desktop.data.sample import load_sample
from computeshare_desktop.data.torchvision_sets import load_torchvision
from computeshare_desktop.errors import ConfigError, DatasetUnavailableError

logger = logging.getLogger(__name__)

DATA_DIR_ENV = "COMPUTESHARE_DATA_DIR"
SPLITS = ("train", "test")

_cache: dict[tuple[str, str, str], ArrayDataset] = {}
# One lock for all loads: two threads asking for the same split must not download it twice.
_cache_lock = threading.Lock()


def default_cache_dir() -> pathlib.Path:
    """Return $COMPUTESHARE_DATA_DIR, else the user cache dir's ``datasets`` folder."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return pathlib.Path(override).expanduser()
    return pathlib.Path(platformdirs.user_cache_dir("computeshare", appauthor=False)) / "datasets"


def load_dataset(
    name: str,
    split: str,
    *,
    root: str | os.PathLike[str] | None = None,
    download: bool = True,
) -> ArrayDataset:
    """Load a dataset split as uint8 N×C×H×W images and int64 labels.

    Results are cached in memory and shared between callers: treat the tensors as read-only.
    ``mnist-sample`` ships with the package and ignores ``root`` and ``download``.

    Raises:
        ConfigError: unknown name or a split other than "train"/"test".
        DatasetUnavailableError: not cached under ``root`` and not downloadable.
    """
    dataset_info(name)
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; use 'train' or 'test'")
    if name == SAMPLE_NAME:
        return load_sample(split)
    base = pathlib.Path(root).expanduser() if root is not None else default_cache_dir()
    key = (name, split, str(base.resolve()))
    with _cache_lock:
        if key not in _cache:
            _cache[key] = load_torchvision(name, split, base, download)
        return _cache[key]


def clear_cache() -> None:
    """Forget every cached torchvision split (mnist-sample stays; it is small)."""
    with _cache_lock:
        _cache.clear()


# Where torchvision keeps each set under the cache folder (what a download leaves there).
CACHED_AS = {"mnist": "MNIST", "fashion-mnist": "FashionMNIST", "kmnist": "KMNIST",
             "emnist": "EMNIST", "cifar10": "cifar-10-batches-py",
             "cifar100": "cifar-100-python", "svhn": "test_32x32.mat"}


def needs_download(name: str, *, root: str | os.PathLike[str] | None = None) -> bool:
    """A quick look (no loading): False when ``name`` is bundled or seems to be in the
    cache folder, True when it would have to be downloaded first."""
    dataset_info(name)
    if name == SAMPLE_NAME:
        return False
    base = pathlib.Path(root).expanduser() if root is not None else default_cache_dir()
    return not (base / CACHED_AS[name]).exists()


def is_available(name: str, *, root: str | os.PathLike[str] | None = None) -> bool:
    """True when both splits of ``name`` load without the network (they stay cached in
    memory, so the session that follows does not load them again)."""
    try:
        for split in SPLITS:
            load_dataset(name, split, root=root, download=False)
    except DatasetUnavailableError:
        return False
    return True


def download(name: str, progress: Callable[[int, str], None] | None = None, *,
             root: str | os.PathLike[str] | None = None) -> None:
    """Fetch both splits of ``name`` into the cache folder; ``progress(step, text)`` is
    called before each of the two steps. Raises DatasetUnavailableError when offline."""
    for step, split in enumerate(SPLITS):
        if progress is not None:
            progress(step, f"Downloading the {split} split of {name}…")
        load_dataset(name, split, root=root, download=True)
