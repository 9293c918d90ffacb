"""What a session would train on, read before it opens: for the Host dialog's preview.

A folder of images is read from names and ``stat`` (``folders.scan``), a sample of image
headers (the size the session will train at) and a handful of small thumbnails; a table
by its first rows; a Hugging Face ``save_to_disk`` folder by its metadata files. Nothing
here decodes a whole dataset, so a folder of 100k images previews in the time of a scan.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import numpy as np

from ..errors import ConfigError
from .folders import UNREADABLE, Entry, Layout, folder_name, scan
from .hf import (DICT, INFO, class_names, columns, dataset_file, image_reader, is_hf_spec,
                 label_column, open_splits, reads_images, row_classes)
from .image_cache import DEFAULT_SIZE, Item
from .tables import TABLE_SUFFIXES, read_head

THUMBNAILS = 8
THUMB_SIDE = 64
HEADER_SAMPLE = 256  # image headers opened to tell the size (all of them in a small folder)
TRIES = 4 * THUMBNAILS  # files tried for thumbnails before giving up on damaged ones
HEAD_ROWS = 5
COUNT_BYTES = 20_000_000  # a table this small is read whole for its class counts

IMAGES, TABLE, HUGGING_FACE = "images", "table", "hf"


@dataclass(frozen=True, slots=True)
class Thumbnail:
    """One small image (uint8 H×W×3, at most THUMB_SIDE a side) with its class."""

    name: str
    label: str
    pixels: np.ndarray


@dataclass(frozen=True, slots=True)
class Preview:
    """What a dataset spec holds, as a person reads it; ``error`` when it cannot be used."""

    kind: str  # IMAGES, TABLE or HUGGING_FACE
    name: str
    summary: str = ""  # "1,234 images: 1,110 to train, 124 to test"
    classes: tuple[tuple[str, int], ...] = ()  # (name, count), in label order
    image_size: str = ""  # "64×64 (their own size)"
    skipped: tuple[str, ...] = ()  # Skipped.lines()
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    label: str = ""  # a table's label column
    notes: tuple[str, ...] = ()
    thumbnails: tuple[Thumbnail, ...] = field(default=(), repr=False)
    error: str = ""


def spec_kind(spec: str) -> str | None:
    """IMAGES, TABLE or HUGGING_FACE for a spec naming such a folder or file, else None."""
    path = Path(spec.strip()).expanduser() if spec.strip() else None
    if path is None:
        return None
    if path.is_dir():
        return HUGGING_FACE if is_hf_spec(str(path)) else IMAGES
    if path.is_file() and path.suffix.lower() in TABLE_SUFFIXES:
        return TABLE
    return None


def preview(spec: str, *, image_size: int = 0, test_fraction: float = 0.1,
            label: str = "", input: str = "") -> Preview:
    """The preview of ``spec`` (see ``spec_kind``); a spec it cannot read gets ``error``."""
    path = Path(spec.strip()).expanduser()
    kind = spec_kind(spec)
    try:
        if kind == IMAGES:
            return preview_folder(path, image_size=image_size, test_fraction=test_fraction)
        if kind == TABLE:
            return preview_table(path, label=label)
        if kind == HUGGING_FACE:
            return preview_hf(path, input=input, label=label)
    except (ConfigError, OSError, ValueError) as exc:
        return Preview(kind or "", path.name, error=str(exc))
    return Preview("", path.name, error=f"{spec} is not a folder, a .csv or a .parquet file")


# ---------------------------------------------------------------------- image folders
def preview_folder(root: Path, *, image_size: int = 0, test_fraction: float = 0.1,
                   thumbnails: int = THUMBNAILS) -> Preview:
    """A folder's classes and counts, the size it trains at, what is skipped, thumbnails.

    Raises:
        ConfigError: what ``scan`` refuses (fewer than 2 classes, no test image).
    """
    layout = scan(root, test_fraction)
    unreadable: set[str] = set()
    size = _size_text(layout, image_size, unreadable)
    counts = Counter(e.label for e in layout.train + layout.test if e.path not in unreadable)
    thumbs = tuple(_thumbnails(layout, thumbnails))
    train, test = (sum(e.path not in unreadable for e in split)
                   for split in (layout.train, layout.test))
    how = "train/ and test/" if layout.split_by_folder else f"{test_fraction:g} held out"
    return Preview(IMAGES, folder_name(layout.root),
                   summary=f"{train + test:,} images: {train:,} to train, {test:,} to test "
                           f"({how})",
                   classes=tuple((name, counts[i]) for i, name in enumerate(layout.classes)),
                   image_size=size, skipped=tuple(layout.skipped.lines()), thumbnails=thumbs)


def _size_text(layout: Layout, image_size: int, unreadable: set[str]) -> str:
    """The size the session trains at, by the image cache's rule, from a sample of headers
    (those that do not open are skipped, and put in ``unreadable``)."""
    entries = _spread(layout.train + layout.test, HEADER_SAMPLE)
    sizes = set()
    for entry in entries:
        size = _header(layout, entry)
        if size is None:
            unreadable.add(entry.path)
            layout.skipped.add(UNREADABLE, entry.path)
        else:
            sizes.add(size)
    if image_size > 0:
        return f"{image_size}×{image_size} (as set)"
    if len(sizes) > 1 or not sizes:
        return f"{DEFAULT_SIZE}×{DEFAULT_SIZE} (the images' sizes differ)"
    width, height = next(iter(sizes))
    total = len(layout.train) + len(layout.test)
    sample = "" if len(entries) == total else (f"; read from {len(entries):,} of {total:,}, "
                                               f"else {DEFAULT_SIZE}×{DEFAULT_SIZE}")
    return f"{width}×{height} (their own size{sample})"


def _header(layout: Layout, entry: Entry) -> tuple[int, int] | None:
    from PIL import Image  # Pillow only where images are read

    try:
        with Image.open(layout.root / entry.path) as image:
            return image.size
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


def _spread(entries: tuple[Entry, ...], count: int) -> list[Entry]:
    """At most ``count`` entries, evenly spread over ``entries`` (all when fewer)."""
    if len(entries) <= count:
        return list(entries)
    step = len(entries) / count
    return [entries[int(i * step)] for i in range(count)]


def _thumbnails(layout: Layout, count: int) -> list[Thumbnail]:
    """Up to ``count`` thumbnails, taking each class in turn; damaged files are passed by."""
    by_class: dict[int, list[Entry]] = {}
    for entry in layout.train + layout.test:
        by_class.setdefault(entry.label, []).append(entry)
    order = [e for turn in range(TRIES) for e in
             (files[turn] for files in by_class.values() if turn < len(files))][:TRIES]
    thumbs: list[Thumbnail] = []
    for entry in order:
        if len(thumbs) == count:
            break
        pixels = thumbnail(layout.root / entry.path)
        if pixels is not None:
            thumbs.append(Thumbnail(entry.path, layout.classes[entry.label], pixels))
    return thumbs


def thumbnail(path: Path | BinaryIO, side: int = THUMB_SIDE) -> np.ndarray | None:
    """``path`` (a file, or its bytes) decoded small (uint8 H×W×3, at most ``side`` a
    side), or None."""
    from PIL import Image, ImageOps

    try:
        with Image.open(path) as opened:
            opened.draft("RGB", (side, side))  # JPEG decodes at a fraction of its size
            opened.load()
            image = ImageOps.exif_transpose(opened).convert("RGB")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None
    image.thumbnail((side, side))
    return np.ascontiguousarray(np.asarray(image, dtype=np.uint8))


# ---------------------------------------------------------------------- tables
def preview_table(path: Path, *, label: str = "") -> Preview:
    """A table's columns, first rows, label column and (for a small file) class counts."""
    columns, rows = read_head(path, HEAD_ROWS)
    if not columns:
        raise ConfigError(f"{path.name} has no columns")
    chosen = label or columns[-1]
    notes: list[str] = []
    classes: tuple[tuple[str, int], ...] = ()
    if chosen not in columns:
        notes.append(f"no column named {chosen!r}: the label is one of the columns")
    elif path.stat().st_size <= COUNT_BYTES:
        classes = _label_counts(path, columns.index(chosen))
    kind = "Parquet" if path.suffix.lower() == ".parquet" else "CSV"
    return Preview(TABLE, path.name, summary=f"{kind} table, {len(columns)} columns",
                   classes=classes, columns=tuple(columns),
                   rows=tuple(tuple(r) for r in rows), label=chosen, notes=tuple(notes))


def _label_counts(path: Path, column: int) -> tuple[tuple[str, int], ...]:
    """Each label value's count, in sorted order."""
    from .tables import read_rows

    _, body = read_rows(path)
    counts = Counter(row[column] if column < len(row) else "" for row in body)
    return tuple(sorted(counts.items()))


# ---------------------------------------------------------------------- Hugging Face
def preview_hf(path: Path, *, input: str = "", label: str = "") -> Preview:
    """A ``save_to_disk`` folder's splits, rows and columns (from its JSON files), then,
    when ``datasets`` reads it, the columns a session takes, its classes and thumbnails."""
    splits = _hf_splits(path)
    parts: list[str] = []
    columns: list[str] = []
    for split in splits:
        folder = path / split if split else path
        info = dataset_file(folder / INFO, InfoFile(), "the preview shows less")
        columns = columns or list(info.features or {})
        rows = sum(f.num_examples for f in (info.splits or {}).values())
        parts.append(f"{split or 'one split'}" + (f" ({rows:,} rows)" if rows else ""))
    shown = Preview(HUGGING_FACE, path.name,
                    summary="Hugging Face dataset: " + (", ".join(parts) or "no splits"),
                    columns=tuple(columns))
    try:
        return _hf_contents(shown, path, input, label)
    except ConfigError as exc:  # no datasets library, or columns it cannot use: say why
        return replace(shown, notes=(str(exc),))


def _hf_contents(shown: Preview, path: Path, input: str, label: str) -> Preview:
    """``shown`` with the label column, the classes with counts and (images) thumbnails."""
    train, _ = open_splits(path, test=False)
    image = columns(train, input=input, label=label).image if reads_images(train, input) \
        else ""
    chosen = label_column(train, label)
    names = class_names(train, chosen)
    rows = row_classes(train, chosen)
    counts = Counter(rows)
    thumbs: list[Thumbnail] = []
    if image:
        read = image_reader([train], image)
        for row in _spread_rows(rows, names):
            pixels = thumbnail(read(Item(f"train[{row}]", 0, True, (0, row))))
            if pixels is not None:
                thumbs.append(Thumbnail(f"train[{row}]", str(rows[row]), pixels))
    note = f"Images from the column {image!r}" if image else "Feature columns, read as a table"
    return replace(shown, classes=tuple((n, counts[n]) for n in names),
                               label=chosen, notes=(note,), thumbnails=tuple(thumbs))


def _spread_rows(rows: list[str | None], names: tuple[str, ...]) -> list[int]:
    """Up to THUMBNAILS rows, each class in turn (the first rows of each)."""
    firsts: dict[str, list[int]] = {name: [] for name in names}
    for index, name in enumerate(rows):
        if name is not None and name in firsts and len(firsts[name]) < THUMBNAILS:
            firsts[name].append(index)
    order = [r for turn in range(THUMBNAILS) for r in
             (found[turn] for found in firsts.values() if turn < len(found))]
    return order[:THUMBNAILS]


class SplitSize(msgspec.Struct):
    """A split as dataset_info.json counts it (its other fields are ignored)."""

    num_examples: int = 0


class InfoFile(msgspec.Struct):
    """dataset_info.json, which ``datasets`` writes: the columns and rows a preview
    shows before the library reads the folder (its other fields are ignored)."""

    features: dict[str, Any] | None = None  # each column's type, by name, in order
    splits: dict[str, SplitSize] | None = None


class DictFile(msgspec.Struct):
    """dataset_dict.json: the split folders of a DatasetDict."""

    splits: list[str] = []


def _hf_splits(path: Path) -> list[str]:
    """The split folders a dataset dict names, or [""] for a single dataset."""
    if (path / DICT).is_file():
        return dataset_file(path / DICT, DictFile(), "the preview shows no split").splits
    return [""]
