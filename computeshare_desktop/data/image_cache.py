"""Images decoded once with Pillow into a uint8 file in the cache folder, then memory-mapped
by every session on the same data: the store every source of images shares (a folder of
image files, a Hugging Face dataset's image column, a second source for the test split).

A ``Source`` says what to decode: each image's name, label and split, and how to open it.
Images stream from Pillow straight into the file, so memory stays bounded whatever the
source's size. ``meta.json`` is written last: a cut preparation is no cache. The caller
chooses the cache folder (its key says what the images were prepared from).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import msgspec
import numpy as np

from ..errors import ComputeShareError, ConfigError
from ..files import atomic_write
from ..pacing import Throttle
from ..stored import Manifest, read_manifest, stored_bytes
from .arrays import ArrayDataset, mapped_splits
from .folders import UNREADABLE, Skipped, cover
from .info import DatasetInfo
from .mapped import DIGITS, MIN_STD

log = logging.getLogger(__name__)

FORMAT = 1  # the cache's layout; another one is prepared again
DEFAULT_SIZE = 224  # images of several sizes are brought to this square, unless told
LOG_EVERY_S = 2.0
REPORT_EVERY_S = 0.1
GRAY_MODES = frozenset({"1", "L", "LA", "I", "I;16", "F"})
IMAGES, LABELS, META = "images.u8", "labels.i64", "meta.json"


class PrepareCancelled(ComputeShareError):
    """The person stopped the preparation; nothing was cached."""


@dataclass(frozen=True, slots=True)
class PrepareProgress:
    """How far the decoding is: ``done`` of ``total`` images, and a line for a person."""

    done: int
    total: int
    text: str


@dataclass(frozen=True, slots=True, eq=False)
class Prepared:
    """The data's two splits, what was skipped, and whether the cache had them."""

    train: ArrayDataset
    test: ArrayDataset
    skipped: Skipped
    cached: bool


Progress = Callable[[PrepareProgress], None]
Cancel = Callable[[], bool]


@dataclass(frozen=True, slots=True)
class Item:
    """One image to decode: how a person finds it, its label, its split, and what the
    source needs to open it."""

    name: str  # a relative path, or "train[17]": a skip names the image so
    label: int
    train: bool  # in the training split, else in the test split
    ref: Any = None  # the source's own handle (None: the name is enough)


@dataclass(frozen=True, slots=True, eq=False)
class Source:
    """Images to decode into one cache, the training split's items first."""

    name: str  # the data's name for people and workers, never a path
    where: str  # how the log names it (a path is fine there)
    classes: tuple[str, ...]  # the class names in label order
    items: Sequence[Item]
    skipped: Skipped  # what was left out before decoding; decoding adds to it
    read: Callable[[Item], Any]  # what Image.open takes for an item (a path, a binary file)
    shape: tuple[int, int, int] | None = None  # (C, H, W) to bring every image to; None:
    # chosen from the images' headers and the image size asked for


def prepare_images(source: Source, folder: Path, *, image_size: int = 0,
                   progress: Progress | None = None,
                   cancel: Cancel | None = None) -> Prepared:
    """``source``'s images as uint8 N×C×H×W splits, from the cache in ``folder`` or
    decoded into it.

    ``image_size`` 0: the images' own size when they all share one, else 224 square.

    Raises:
        ConfigError: fewer than 2 classes in a training split, no test image in a test
            split, or no image that decodes.
        PrepareCancelled: ``cancel()`` said so.
    """
    prepared = _load(folder)
    if prepared is None:
        _build(source, folder, image_size, progress, cancel)
        prepared = _load(folder)
        if prepared is None:
            raise ConfigError(f"the prepared images of {source.where} could not be read "
                              f"back from {folder}")
        prepared = dataclasses.replace(prepared, cached=False)
    else:
        log.info("%s: prepared images loaded from the cache (%d train, %d test)",
                 source.where, len(prepared.train), len(prepared.test))
    for line in prepared.skipped.lines():  # the views say it once, as a summary
        log.info("%s: %s", source.where, line)
    return prepared


Size = Annotated[int, msgspec.Meta(ge=1)]
Count = Annotated[int, msgspec.Meta(ge=0)]


class ImageMeta(Manifest, kw_only=True):
    """A prepared cache's meta.json (written last: a cut preparation is no cache)."""

    name: str  # the data's name for people and workers
    channels: Size
    height: Size
    width: Size
    classes: tuple[str, ...]  # in label order
    train: Count  # the images of each split, training first
    test: Count
    mean: tuple[float, ...]  # per channel, from the training images, in [0, 1]
    std: tuple[float, ...]
    skipped: Skipped = msgspec.field(default_factory=Skipped)  # what was left out
    root: str = ""  # where the images came from, as the log names it

    def __post_init__(self) -> None:
        self.info()  # a ValueError here: the manifest is damaged (msgspec says which)

    def info(self) -> DatasetInfo:
        """The images' info, statistics included."""
        return DatasetInfo(self.name, self.channels, self.height, self.width,
                           len(self.classes), self.mean, self.std, self.classes)


def _load(folder: Path) -> Prepared | None:
    """The cache in ``folder``, or None when it is not (wholly) there (a damaged
    meta.json is said and kept aside)."""
    meta = read_manifest(folder / META, ImageMeta, FORMAT)
    if meta is None:
        return None
    splits = mapped_splits(folder / IMAGES, folder / LABELS, meta.info(), meta.train,
                           meta.test)
    return None if splits is None else Prepared(*splits, meta.skipped, cached=True)


@dataclass(slots=True)
class _Plan:
    """What the headers said: the images that open, and the shape to bring them to."""

    items: list[Item]
    channels: int
    width: int
    height: int


def _build(source: Source, folder: Path, image_size: int, progress: Progress | None,
           cancel: Cancel | None) -> None:
    """Decode every image into ``folder`` (the meta file last)."""
    started = time.monotonic()
    plan = _headers(source, image_size)
    writer = _Writer(source, plan, progress, cancel)
    atomic_write(folder / IMAGES, writer.write)
    trained = set(writer.labels[:writer.train])
    wants_train = any(item.train for item in source.items)
    wants_test = any(not item.train for item in source.items)
    if (wants_train and len(trained) < 2) or (wants_test and writer.test == 0):
        raise ConfigError(f"{source.where}: {writer.train} training and {writer.test} test "
                          f"images could be read, in {len(trained)} class(es): a classifier "
                          f"needs 2 classes or more and a test image")
    atomic_write(folder / LABELS, writer.labels.tobytes())
    mean, std = writer.statistics()
    meta = ImageMeta(format=FORMAT, name=source.name, channels=plan.channels,
                     height=plan.height, width=plan.width, classes=tuple(source.classes),
                     train=writer.train, test=writer.test, mean=mean, std=std,
                     skipped=source.skipped, root=source.where)
    atomic_write(folder / META, stored_bytes(meta))
    seconds = time.monotonic() - started
    log.info("%s: prepared %d images at %d×%d×%d in %.1f s (%.0f images/s)", source.where,
             writer.train + writer.test, plan.channels, plan.height, plan.width, seconds,
             (writer.train + writer.test) / max(seconds, 1e-9))


def _headers(source: Source, image_size: int) -> _Plan:
    """Open each image's header (no pixels): which open, their sizes and colours."""
    from PIL import Image  # Pillow only where images are read

    items: list[Item] = []
    sizes: set[tuple[int, int]] = set()
    gray = True
    for item in source.items:
        try:
            with Image.open(source.read(item)) as image:
                sizes.add(image.size)
                gray = gray and image.mode in GRAY_MODES
        except (OSError, ValueError, Image.DecompressionBombError):
            source.skipped.add(UNREADABLE, item.name)
            continue
        items.append(item)
    if source.shape is not None:
        channels, height, width = source.shape
        return _Plan(items, channels, width, height)
    if image_size > 0:
        width = height = image_size
    elif len(sizes) == 1:
        width, height = next(iter(sizes))
    else:
        width = height = DEFAULT_SIZE
    return _Plan(items, 1 if gray else 3, width, height)


class _Writer:
    """Streams decoded images into the cache file, counting and measuring as it goes."""

    def __init__(self, source: Source, plan: _Plan, progress: Progress | None,
                 cancel: Cancel | None) -> None:
        self.source, self.plan = source, plan
        self.progress, self.cancel = progress, cancel
        self.labels = array("q")
        self.train = self.test = 0
        self.sums = np.zeros(plan.channels, dtype=np.float64)
        self.squares = np.zeros(plan.channels, dtype=np.float64)
        self._log = Throttle(LOG_EVERY_S, waiting=True)
        self._tell = Throttle(REPORT_EVERY_S, waiting=True)

    def write(self, fh: BinaryIO) -> None:
        """Decode and write each image in order; a damaged one is skipped and counted."""
        total = len(self.plan.items)
        for done, item in enumerate(self.plan.items):
            if self.cancel is not None and self.cancel():
                raise PrepareCancelled(f"preparing {self.source.where} was cancelled")
            pixels = self._decode(item)
            if pixels is None:
                self.source.skipped.add(UNREADABLE, item.name)
            else:
                fh.write(pixels.tobytes())
                self._count(pixels, item.label, item.train)
            self._report(done + 1, total)

    def _decode(self, item: Item) -> np.ndarray | None:
        """One image as uint8 C×H×W at the plan's shape, or None when it does not decode."""
        from PIL import Image, ImageOps

        plan = self.plan
        try:
            with Image.open(self.source.read(item)) as opened:
                opened.load()
                image = ImageOps.exif_transpose(opened).convert("L" if plan.channels == 1
                                                                else "RGB")
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
            return None
        array_ = np.asarray(cover(image, plan.width, plan.height), dtype=np.uint8)
        array_ = array_.reshape(plan.height, plan.width, plan.channels)
        return np.ascontiguousarray(array_.transpose(2, 0, 1))

    def _count(self, pixels: np.ndarray, label: int, train: bool) -> None:
        self.labels.append(label)
        if not train:
            self.test += 1
            return
        self.train += 1
        flat = pixels.reshape(self.plan.channels, -1).astype(np.float64) / 255.0
        self.sums += flat.sum(axis=1)
        self.squares += (flat * flat).sum(axis=1)

    def statistics(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The training images' per-channel mean and standard deviation (in [0, 1])."""
        values = max(1, self.train * self.plan.width * self.plan.height)
        mean = self.sums / values
        std = np.sqrt(np.maximum(self.squares / values - mean * mean, 0.0))
        return (tuple(round(float(m), DIGITS) for m in mean),
                tuple(round(max(float(s), MIN_STD), DIGITS) for s in std))

    def _report(self, done: int, total: int) -> None:
        text = f"preparing {_label(self.source)}: {done:,} of {total:,} images"
        if self._log.due(force=done == total):
            log.info("%s", text)
        if self.progress is not None and self._tell.due(force=done == total):
            self.progress(PrepareProgress(done, total, text))


def _label(source: Source) -> str:
    """What a preparation's progress names: the data, or a test source (``--test``, its
    items all test images) by its own folder's name, never the training data's."""
    if source.items and not source.items[0].train:  # the training items come first
        return f"the test images of {Path(source.where).name}"
    return source.name
