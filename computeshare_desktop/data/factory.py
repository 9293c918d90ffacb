"""``load_dataset``: one entry point for every dataset, with an in-memory cache."""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import pathlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import platformdirs

from computeshare_desktop.data.arrays import ArrayDataset
from computeshare_desktop.data.info import dataset_info
from computeshare_desktop.pacing import Throttle
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


MEGABYTE = 1_000_000
# At most ~20 reports a second; a file's first and last bytes are always reported.
PROGRESS_INTERVAL_S = 0.05


@dataclass(frozen=True, slots=True)
class DownloadProgress:
    """Where a dataset download stands, as ``download`` reports it.

    ``total_bytes`` sums the sizes of the files begun so far (each is known once its
    response starts), so it may grow; it is None while any size is unknown (before the
    first file, or a server that sends no Content-Length). ``file`` counts the files begun
    (0 before the first); ``split`` is the split being fetched; ``text`` is one line for a
    person.
    """

    done_bytes: int
    total_bytes: int | None
    split: str
    file: int
    text: str

    def amount(self) -> str:
        """``42.0 of 170.5 MB``, or ``42.0 MB`` while the total is unknown."""
        return _amount(self.done_bytes, self.total_bytes)


def _amount(done: int, total: int | None) -> str:
    if total is None:
        return f"{done / MEGABYTE:.1f} MB"
    return f"{done / MEGABYTE:.1f} of {total / MEGABYTE:.1f} MB"


Progress = Callable[[DownloadProgress], None]


@dataclass(slots=True, eq=False)
class _File:
    """One file's bytes so far; ``total`` is None when its server did not say."""

    total: int | None
    done: int = 0
    finished: bool = False

    def size(self) -> int | None:
        return self.total if self.total is not None else self.done if self.finished else None


class _Tally:
    """The bytes of every file of one download, passed on to ``progress`` (throttled)."""

    def __init__(self, name: str, progress: Progress) -> None:
        self._name, self._progress = name, progress
        self._split = ""
        self._files: list[_File] = []
        self._throttle = Throttle(PROGRESS_INTERVAL_S)

    def start_split(self, split: str) -> None:
        self._split = split
        self._report(force=True)

    def begin(self, total: int | None) -> _File:
        self._files.append(_File(total))
        self._report(force=True)
        return self._files[-1]

    def add(self, file: _File, count: int) -> None:
        file.done += count
        self._report(force=False)

    def end(self, file: _File, *, failed: bool) -> None:
        """A file is complete; a failed one is dropped (another mirror sends it again)."""
        if file.finished or file not in self._files:
            return
        if failed:
            self._files.remove(file)
        file.finished = True
        self._report(force=True)

    def _report(self, *, force: bool) -> None:
        if self._throttle.due(force):
            self._progress(self._snapshot())

    def _snapshot(self) -> DownloadProgress:
        sizes = [f.size() for f in self._files]
        known = [s for s in sizes if s is not None]
        total = sum(known) if known and len(known) == len(sizes) else None
        done = sum(f.done for f in self._files)
        files = len(self._files)
        text = f"Downloading the {self._split} split of {self._name}"
        text += f" (file {files}): {_amount(done, total)}" if files else "…"
        return DownloadProgress(done, total, self._split, files, text)


class _ByteBar:
    """Stands in for the tqdm bar torchvision opens for each file it fetches."""

    def __init__(self, tally: _Tally, total: int | None) -> None:
        self._tally = tally
        self._file = tally.begin(total)

    def update(self, count: int = 1) -> None:
        self._tally.add(self._file, count)

    def close(self) -> None:
        self._tally.end(self._file, failed=False)

    def __enter__(self) -> _ByteBar:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._tally.end(self._file, failed=kind is not None)


# Held while torchvision's tqdm is replaced: two downloads must not swap it under each other.
_patch_lock = threading.Lock()


@contextlib.contextmanager
def _counting_bytes(tally: _Tally) -> Iterator[None]:
    """Count the bytes torchvision fetches on this thread into ``tally``, by replacing the
    ``tqdm`` that ``torchvision.datasets.utils._urlretrieve`` reports to; other threads
    keep the real one. Restored on the way out, errors included."""
    utils: Any = importlib.import_module("torchvision.datasets.utils")
    owner = threading.get_ident()
    with _patch_lock:
        original = getattr(utils, "tqdm", None)
        if original is None:
            # A torchvision without that module global (it has one up to 0.29 at least):
            # the caller still gets a report per split, without bytes.
            yield
            return

        def bar(*args: Any, total: int | None = None, **kwargs: Any) -> Any:
            if threading.get_ident() != owner:
                return original(*args, total=total, **kwargs)
            return _ByteBar(tally, total)

        utils.tqdm = bar
        try:
            yield
        finally:
            utils.tqdm = original


def download(name: str, progress: Progress | None = None, *,
             root: str | os.PathLike[str] | None = None) -> None:
    """Fetch both splits of ``name`` into the cache folder.

    ``progress`` receives a DownloadProgress when each split starts and as bytes arrive
    (at most ~20 a second, and always each file's first and last bytes), on this thread.

    Raises:
        DatasetUnavailableError: offline, or the server is unreachable.
    """
    tally = _Tally(name, progress if progress is not None else lambda _: None)
    with _counting_bytes(tally):
        for split in SPLITS:
            tally.start_split(split)
            load_dataset(name, split, root=root, download=True)
