"""A folder of images prepared once: decoded with Pillow into a uint8 file in the cache
folder, then memory-mapped by every session on the same files.

The cache is keyed by the files' relative names, sizes and mtimes, the labels, the image
size asked for and the held-out fraction: editing, adding or removing an image prepares
it again. Images stream from Pillow straight into the file, so memory stays bounded
whatever the folder's size. ``meta.json`` is written last: a cut preparation is no cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import torch

from ..errors import ComputeShareError, ConfigError
from ..files import atomic_write
from ..pacing import Throttle
from .arrays import ArrayDataset
from .factory import default_cache_dir, load_dataset
from .folders import UNREADABLE, Entry, Layout, Skipped, cover, folder_name, is_folder_spec, scan
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
    """A folder's two splits, what was skipped, and whether the cache had them."""

    train: ArrayDataset
    test: ArrayDataset
    skipped: Skipped
    cached: bool


Progress = Callable[[PrepareProgress], None]
Cancel = Callable[[], bool]


def load_data(spec: str, *, image_size: int = 0, test_fraction: float = 0.1,
              progress: Progress | None = None,
              cancel: Cancel | None = None) -> tuple[ArrayDataset, ArrayDataset]:
    """A session's (train, test) data: a built-in dataset by name, or a folder of images
    (prepared, or taken from the cache)."""
    if is_folder_spec(spec):
        prepared = prepare_folder(Path(spec), image_size=image_size,
                                  test_fraction=test_fraction, progress=progress,
                                  cancel=cancel)
        return prepared.train, prepared.test
    return load_dataset(spec, "train"), load_dataset(spec, "test")


def prepare_folder(root: Path, *, image_size: int = 0, test_fraction: float = 0.1,
                   cache_dir: Path | None = None, progress: Progress | None = None,
                   cancel: Cancel | None = None) -> Prepared:
    """``root``'s images as uint8 N×C×H×W splits (see ``folders`` for the layouts).

    ``image_size`` 0: the images' own size when they all share one, else 224 square.

    Raises:
        ConfigError: fewer than 2 classes, no test image, or no image that decodes.
        PrepareCancelled: ``cancel()`` said so.
    """
    layout = scan(root, test_fraction)
    base = cache_dir if cache_dir is not None else default_cache_dir()
    folder = base / "folders" / _key(layout, image_size, test_fraction)
    prepared = _load(folder)
    if prepared is None:
        _build(layout, folder, image_size, progress, cancel)
        prepared = _load(folder)
        if prepared is None:
            raise ConfigError(f"the prepared images of {root} could not be read back from "
                              f"{folder}")
        prepared = dataclasses.replace(prepared, cached=False)
    else:
        log.info("%s: prepared images loaded from the cache (%d train, %d test)",
                 layout.root, len(prepared.train), len(prepared.test))
    for line in prepared.skipped.lines():
        log.warning("%s: %s", layout.root, line)
    return prepared


def _key(layout: Layout, image_size: int, test_fraction: float) -> str:
    def rows(entries: tuple[Entry, ...]) -> list[list[Any]]:
        return [[e.path, e.label, e.size, e.mtime_ns] for e in entries]

    text = json.dumps([FORMAT, str(layout.root), layout.classes, image_size, test_fraction,
                       rows(layout.train), rows(layout.test)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _load(folder: Path) -> Prepared | None:
    """The cache in ``folder``, or None when it is not (wholly) there."""
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            return None
        info = DatasetInfo(meta["name"], meta["channels"], meta["height"], meta["width"],
                           len(meta["classes"]), tuple(meta["mean"]), tuple(meta["std"]),
                           tuple(meta["classes"]))
        count, train = meta["train"] + meta["test"], meta["train"]
        images = np.memmap(folder / IMAGES, dtype=np.uint8, mode="c",
                           shape=(count, *info.shape))
        labels = np.fromfile(folder / LABELS, dtype=np.int64)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if labels.shape != (count,):
        return None
    pixels, numbers = torch.from_numpy(images), torch.from_numpy(labels)
    return Prepared(ArrayDataset(pixels[:train], numbers[:train], info),
                    ArrayDataset(pixels[train:], numbers[train:], info),
                    Skipped.from_json(meta["skipped"]), cached=True)


@dataclass(slots=True)
class _Plan:
    """What the headers said: the images that open, and the shape to bring them to."""

    entries: list[tuple[Entry, bool]]  # (entry, in the training split)
    channels: int
    width: int
    height: int


def _build(layout: Layout, folder: Path, image_size: int, progress: Progress | None,
           cancel: Cancel | None) -> None:
    """Decode every image into ``folder`` (the meta file last)."""
    started = time.monotonic()
    plan = _headers(layout, image_size, layout.skipped)
    writer = _Writer(layout, plan, progress, cancel)
    atomic_write(folder / IMAGES, writer.write)
    trained = set(writer.labels[:writer.train])
    if len(trained) < 2 or writer.test == 0:
        raise ConfigError(f"{layout.root}: {writer.train} training and {writer.test} test "
                          f"images could be read, in {len(trained)} class(es): a classifier "
                          f"needs 2 classes or more and a test image")
    atomic_write(folder / LABELS, writer.labels.tobytes())
    meta = {"format": FORMAT, "name": folder_name(layout.root), "channels": plan.channels,
            "height": plan.height, "width": plan.width, "classes": list(layout.classes),
            "train": writer.train, "test": writer.test, **writer.statistics(),
            "skipped": layout.skipped.to_json(), "root": str(layout.root)}
    atomic_write(folder / META, json.dumps(meta, indent=1).encode("utf-8"))
    seconds = time.monotonic() - started
    log.info("%s: prepared %d images at %d×%d×%d in %.1f s (%.0f images/s)", layout.root,
             writer.train + writer.test, plan.channels, plan.height, plan.width, seconds,
             (writer.train + writer.test) / max(seconds, 1e-9))


def _headers(layout: Layout, image_size: int, skipped: Skipped) -> _Plan:
    """Open each file's header (no pixels): which open, their sizes and colours."""
    from PIL import Image  # Pillow only where images are read

    entries: list[tuple[Entry, bool]] = []
    sizes: set[tuple[int, int]] = set()
    gray = True
    for entry, train in [(e, True) for e in layout.train] + [(e, False) for e in layout.test]:
        try:
            with Image.open(layout.root / entry.path) as image:
                sizes.add(image.size)
                gray = gray and image.mode in GRAY_MODES
        except (OSError, ValueError, Image.DecompressionBombError):
            skipped.add(UNREADABLE, entry.path)
            continue
        entries.append((entry, train))
    if image_size > 0:
        width = height = image_size
    elif len(sizes) == 1:
        width, height = next(iter(sizes))
    else:
        width = height = DEFAULT_SIZE
    return _Plan(entries, 1 if gray else 3, width, height)


class _Writer:
    """Streams decoded images into the cache file, counting and measuring as it goes."""

    def __init__(self, layout: Layout, plan: _Plan, progress: Progress | None,
                 cancel: Cancel | None) -> None:
        self.layout, self.plan = layout, plan
        self.progress, self.cancel = progress, cancel
        self.labels = array("q")
        self.train = self.test = 0
        self.sums = np.zeros(plan.channels, dtype=np.float64)
        self.squares = np.zeros(plan.channels, dtype=np.float64)
        self._log = Throttle(LOG_EVERY_S, waiting=True)
        self._tell = Throttle(REPORT_EVERY_S, waiting=True)

    def write(self, fh: BinaryIO) -> None:
        """Decode and write each image in order; a damaged one is skipped and counted."""
        total = len(self.plan.entries)
        for done, (entry, train) in enumerate(self.plan.entries):
            if self.cancel is not None and self.cancel():
                raise PrepareCancelled(f"preparing {self.layout.root} was cancelled")
            pixels = self._decode(entry)
            if pixels is None:
                self.layout.skipped.add(UNREADABLE, entry.path)
            else:
                fh.write(pixels.tobytes())
                self._count(pixels, entry.label, train)
            self._report(done + 1, total)

    def _decode(self, entry: Entry) -> np.ndarray | None:
        """One image as uint8 C×H×W at the plan's shape, or None when it does not decode."""
        from PIL import Image, ImageOps

        plan = self.plan
        try:
            with Image.open(self.layout.root / entry.path) as opened:
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

    def statistics(self) -> dict[str, list[float]]:
        """The training images' per-channel mean and standard deviation (in [0, 1])."""
        values = max(1, self.train * self.plan.width * self.plan.height)
        mean = self.sums / values
        std = np.sqrt(np.maximum(self.squares / values - mean * mean, 0.0))
        return {"mean": [round(float(m), DIGITS) for m in mean],
                "std": [round(max(float(s), MIN_STD), DIGITS) for s in std]}

    def _report(self, done: int, total: int) -> None:
        text = f"preparing {self.layout.root.name}: {done:,} of {total:,} images"
        if self._log.due(force=done == total):
            log.info("%s", text)
        if self.progress is not None and self._tell.due(force=done == total):
            self.progress(PrepareProgress(done, total, text))
