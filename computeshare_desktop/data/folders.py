"""A folder of images sorted into class folders, as a session's data: what is in it.

Two layouts: ``ROOT/train/CLASS/*`` with ``ROOT/test/CLASS/*``, or ``ROOT/CLASS/*`` with a
test split held out per class by a fixed seed. The class names are the training class
folders that hold images, sorted: a label is the name's place in that list, whatever else
is in the folder. What is left out (a file that is not an image, an empty class folder, a
test class with no training images) is counted in a ``Skipped`` with a few examples.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..errors import ConfigError
from .tables import is_table_spec

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".webp"})
SPLIT_SEED = 0  # the held-out split is the same in every session on the same files
EXAMPLES = 5  # the examples of each kind of skip kept to show a person
MAX_NAME = 64
T = TypeVar("T")

# The kinds of skip, each with the words that say it.
NOT_IMAGE = "not an image file"
EMPTY_CLASS = "an empty class folder"
UNKNOWN_CLASS = "a test image of a class with no training images"
UNREADABLE = "an unreadable or damaged image"


@dataclass(frozen=True, slots=True)
class Entry:
    """One image file: its path relative to the root, its label, its size and mtime."""

    path: str  # with "/" separators
    label: int
    size: int
    mtime_ns: int


@dataclass(slots=True)
class Skipped:
    """What was left out, by kind: a count and the first few examples of each."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, kind: str, example: str) -> None:
        """Count one more ``kind``; keep ``example`` if fewer than EXAMPLES are kept."""
        self.counts[kind] = self.counts.get(kind, 0) + 1
        kept = self.examples.setdefault(kind, [])
        if len(kept) < EXAMPLES:
            kept.append(example)

    def lines(self) -> list[str]:
        """One line per kind: ``skipped 3 (not an image file): a.txt, b.csv``."""
        return [f"skipped {count} ({kind}): {', '.join(self.examples[kind])}"
                + (", …" if count > len(self.examples[kind]) else "")
                for kind, count in self.counts.items()]


@dataclass(frozen=True, slots=True)
class Layout:
    """A folder's images: the class names in label order, each split's files, the skips."""

    root: Path
    classes: tuple[str, ...]
    train: tuple[Entry, ...]
    test: tuple[Entry, ...]
    skipped: Skipped
    split_by_folder: bool  # train/ and test/ given; else the test split was held out


def is_folder_spec(text: str) -> bool:
    """A dataset spec that names an existing folder."""
    return bool(text) and Path(text).expanduser().is_dir()


def folder_name(root: Path) -> str:
    """The data's name for people and workers: the folder's own name, never its path."""
    text = "".join(c if c.isalnum() or c in "-_." else "-" for c in root.name)
    return text[:MAX_NAME] or "images"


def dataset_label(spec: str) -> str:
    """How a session's data is named to others (adverts, session names): a folder by its
    own name, a table by its file's name without the suffix, a dataset by its name."""
    if is_table_spec(spec):
        return folder_name(Path(spec).expanduser().absolute().with_suffix(""))
    return folder_name(Path(spec).expanduser().absolute()) if is_folder_spec(spec) else spec


def own_split(root: Path) -> bool:
    """Whether a folder of images brings its own split (``train/`` and ``test/``): then its
    ``test/`` images test and no fraction is held out."""
    return (root / "train").is_dir() and (root / "test").is_dir()


def scan(root: Path, test_fraction: float, *, tests: bool = True) -> Layout:
    """What ``root`` holds, read from names and ``stat`` alone (no image is opened).
    ``tests`` False: another source tests (``--test``), so every training image trains
    and ``ROOT/test`` is not read.

    Raises:
        ConfigError: not a folder, fewer than 2 classes with images, or no test image.
    """
    root = root.expanduser().absolute()
    if not root.is_dir():
        raise ConfigError(f"{root} is not a folder")
    skipped = Skipped()
    by_folder = own_split(root)
    train_files = _classes(root / "train" if by_folder else root, skipped, root)
    classes = tuple(sorted(train_files))
    if len(classes) < 2:
        raise ConfigError(f"{root} has {len(classes)} class folder(s) with images: a "
                          f"classifier needs 2 or more (ROOT/CLASS/image files, or "
                          f"ROOT/train/CLASS and ROOT/test/CLASS)")
    labels = {name: i for i, name in enumerate(classes)}
    if not tests:
        return Layout(root, classes, _entries(train_files, labels), (), skipped, by_folder)
    if by_folder:
        train = _entries(train_files, labels)
        test_files = _classes(root / "test", skipped, root)
        for name in sorted(set(test_files) - set(classes)):
            for entry in test_files.pop(name):
                skipped.add(UNKNOWN_CLASS, entry[0])
        test = _entries(test_files, labels)
    else:
        train, test = _hold_out(train_files, labels, test_fraction)
    if not test:
        raise ConfigError(f"{root} has no test images: give more images per class, or "
                          f"ROOT/test/CLASS folders")
    return Layout(root, classes, train, test, skipped, by_folder)


_Found = dict[str, list[tuple[str, int, int]]]  # class -> [(relative path, size, mtime)]


def class_files(root: Path) -> tuple[_Found, Skipped]:
    """The image files of ``ROOT/CLASS/*`` (of ``ROOT/test/CLASS/*`` when there is a test
    folder), by class name, relative to ``ROOT``: a second source for the test split.

    Raises:
        ConfigError: not a folder.
    """
    root = root.expanduser().absolute()
    if not root.is_dir():
        raise ConfigError(f"{root} is not a folder")
    skipped = Skipped()
    folder = root / "test" if (root / "test").is_dir() else root
    return _classes(folder, skipped, root), skipped


def _classes(folder: Path, skipped: Skipped, root: Path) -> _Found:
    """Each class folder's image files (sorted), stray files and empty classes skipped."""
    found: _Found = {}
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if not item.is_dir():
            if folder != root or item.name not in ("train", "test"):
                _stray(item, skipped, root)
            continue
        files = _images(item, skipped, root)
        if files:
            found[item.name] = files
        else:
            skipped.add(EMPTY_CLASS, _relative(item, root) + "/")
    return found


def _images(folder: Path, skipped: Skipped, root: Path) -> list[tuple[str, int, int]]:
    """The image files anywhere under one class folder, sorted by relative path."""
    files = []
    for top, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            path = Path(top) / name
            if path.suffix.lower() not in IMAGE_SUFFIXES:
                _stray(path, skipped, root)
                continue
            stat = path.stat()
            files.append((_relative(path, root), stat.st_size, stat.st_mtime_ns))
    return files


def _stray(path: Path, skipped: Skipped, root: Path) -> None:
    if not path.name.startswith("."):  # .DS_Store and friends are nobody's mistake
        skipped.add(NOT_IMAGE, _relative(path, root))


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _entries(found: _Found, labels: dict[str, int]) -> tuple[Entry, ...]:
    return tuple(Entry(path, labels[name], size, mtime)
                 for name in sorted(found) for path, size, mtime in found[name])


def _hold_out(found: _Found, labels: dict[str, int],
              fraction: float) -> tuple[tuple[Entry, ...], tuple[Entry, ...]]:
    """Each class's files split by ``hold_out_per_class``."""
    groups = {name: [Entry(p, labels[name], s, m) for p, s, m in files]
              for name, files in found.items()}
    train, test = hold_out_per_class(groups, fraction)
    return tuple(train), tuple(test)


def hold_out_per_class(groups: Mapping[str, Sequence[T]],
                       fraction: float) -> tuple[list[T], list[T]]:
    """Stratified: each class gives ``fraction`` of its items (one at least when it has
    two or more, never its last) to the test split, chosen by a fixed seed; the classes
    are taken in sorted order and each keeps its items' order."""
    rng = random.Random(SPLIT_SEED)
    train: list[T] = []
    test: list[T] = []
    for name in sorted(groups):
        entries = groups[name]
        order = list(range(len(entries)))
        rng.shuffle(order)
        held = 0 if len(entries) < 2 else min(len(entries) - 1,
                                               max(1, math.floor(len(entries) * fraction
                                                                 + 0.5)))
        chosen = set(order[:held])
        test += [e for i, e in enumerate(entries) if i in chosen]
        train += [e for i, e in enumerate(entries) if i not in chosen]
    return train, test


def cover(image: Any, width: int, height: int) -> Any:
    """``image`` (Pillow's) scaled to cover ``width``×``height`` with its aspect kept,
    then cropped to it around the middle."""
    scale = max(width / image.width, height / image.height)
    size = (max(width, math.ceil(image.width * scale - 1e-6)),
            max(height, math.ceil(image.height * scale - 1e-6)))
    if size != image.size:
        image = image.resize(size, resample=3)  # bicubic (Image.Resampling.BICUBIC)
    left, top = (size[0] - width) // 2, (size[1] - height) // 2
    return image.crop((left, top, left + width, top + height))
