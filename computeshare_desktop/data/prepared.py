"""A folder of images prepared once: decoded with Pillow into a uint8 file in the cache
folder (see ``image_cache``), then memory-mapped by every session on the same files; and
``load_data``, a session's data whatever its spec.

The cache is keyed by the files' relative names, sizes and mtimes, the labels, the image
size asked for and the held-out fraction: editing, adding or removing an image prepares
it again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .arrays import ArrayDataset
from .factory import default_cache_dir, load_dataset
from .folders import Entry, Layout, folder_name, is_folder_spec, scan
from .image_cache import (DEFAULT_SIZE, FORMAT, Cancel, Item, PrepareCancelled,
                          PrepareProgress, Prepared, Progress, Source, prepare_images)
from .hf import holds_images, is_hf_spec, prepare_hf
from .hf_table import prepare_hf_table
from .second_source import prepare_test
from .table_cache import PreparedTable, prepare_table
from .table_test import prepare_table_test
from .tables import is_table_spec

__all__ = ["DEFAULT_SIZE", "Cancel", "PrepareCancelled", "PrepareProgress", "Prepared",
           "Progress", "check_options", "is_table_data", "load_data", "prepare_folder",
           "prepare_table_data"]


def load_data(spec: str, *, image_size: int = 0, test_fraction: float = 0.1,
              progress: Progress | None = None, cancel: Cancel | None = None,
              label: str = "", input: str = "",
              test_spec: str = "") -> tuple[ArrayDataset, ArrayDataset]:
    """A session's (train, test) data: a built-in dataset by name, a folder of images, a
    Hugging Face dataset saved with ``save_to_disk`` (``input``, ``label``: its image and
    label columns; feature columns without an image column are a table) or a table
    (``label``: its label column); prepared, or taken from the cache. ``test_spec``: a
    second source for the test split (``second_source``; for a table, ``table_test``),
    instead of the one the data gives; all of the training data then trains."""
    check_options(spec, image_size=image_size, label=label, input=input)
    whole, cache = bool(test_spec), default_cache_dir()
    if is_table_data(spec, input):
        table = prepare_table_data(spec, test_fraction=test_fraction, label=label,
                                   input=input, test_spec=test_spec, cache_dir=cache,
                                   progress=progress, cancel=cancel)
        return table.train, table.test
    if is_hf_spec(spec):
        prepared = prepare_hf(Path(spec), image_size=image_size, test_fraction=test_fraction,
                              input=input, label=label, whole=whole, cache_dir=cache,
                              progress=progress, cancel=cancel)
        train, test = prepared.train, prepared.test
    elif is_folder_spec(spec):
        prepared = prepare_folder(Path(spec), image_size=image_size, whole=whole,
                                  test_fraction=test_fraction, progress=progress,
                                  cancel=cancel)
        train, test = prepared.train, prepared.test
    else:
        train = load_dataset(spec, "train")
        test = train if whole else load_dataset(spec, "test")
    if whole:
        test = prepare_test(test_spec, train.info, cache_dir=cache, input=input,
                            label=label, progress=progress, cancel=cancel)
    return train, test


def check_options(spec: str, *, image_size: int = 0, label: str = "",
                  input: str = "") -> None:
    """Refuse an option the data's kind has no use for, before anything is prepared:
    ``--image-size`` on a table, ``--label``/``--input`` on a folder of images or a
    built-in dataset (they choose a table's or a saved dataset's columns).

    Raises:
        ConfigError: which option, and what it applies to.
    """
    if is_table_spec(spec) or is_hf_spec(spec):
        if image_size and is_table_data(spec, input):
            raise ConfigError(f"--image-size applies to images (a folder, a saved dataset's "
                              f"image column, a built-in); {spec} is a table")
        return
    kind = "a folder of images" if is_folder_spec(spec) else "a built-in dataset"
    for flag, value in (("--label", label), ("--input", input)):
        if value:
            raise ConfigError(f"{flag} applies to tables (CSV, Parquet) and saved Hugging "
                              f"Face datasets, where it names a column; {spec} is {kind}, "
                              f"whose classes are its folders' names")


def is_table_data(spec: str, input: str = "") -> bool:
    """Whether ``spec`` is a table: a CSV or Parquet file, or a saved Hugging Face
    dataset of feature columns (no image column, ``input`` naming none)."""
    return is_table_spec(spec) or (is_hf_spec(spec) and not holds_images(Path(spec), input))


def prepare_table_data(spec: str, *, test_fraction: float = 0.1, label: str = "",
                       input: str = "", test_spec: str = "", cache_dir: Path | None = None,
                       progress: Progress | None = None,
                       cancel: Cancel | None = None) -> PreparedTable:
    """A table's splits (``is_table_data``), prepared or from the cache, the test split
    from ``test_spec``'s table when given (then every training row trains).

    Raises:
        ConfigError: as ``table_cache`` and ``table_test`` say.
        PrepareCancelled: ``cancel()`` said so; nothing was cached.
    """
    cache = cache_dir if cache_dir is not None else default_cache_dir()
    if is_hf_spec(spec):
        return prepare_hf_table(Path(spec), test_fraction=test_fraction, input=input,
                                label=label, cache_dir=cache, test_spec=test_spec,
                                progress=progress, cancel=cancel)
    table = prepare_table(Path(spec), label=label, test_fraction=test_fraction,
                          cache_dir=cache, whole=bool(test_spec), progress=progress,
                          cancel=cancel, input=input)
    if not test_spec:
        return table
    return dataclasses.replace(table, test=prepare_table_test(
        test_spec, table.train, table.schema, cache_dir=cache, progress=progress,
        cancel=cancel))


def prepare_folder(root: Path, *, image_size: int = 0, test_fraction: float = 0.1,
                   cache_dir: Path | None = None, progress: Progress | None = None,
                   cancel: Cancel | None = None, whole: bool = False) -> Prepared:
    """``root``'s images as uint8 N×C×H×W splits (see ``folders`` for the layouts).

    ``image_size`` 0: the images' own size when they all share one, else 224 square.
    ``whole``: another source tests, so every training image trains (no test split).

    Raises:
        ConfigError: fewer than 2 classes, no test image, or no image that decodes.
        PrepareCancelled: ``cancel()`` said so.
    """
    layout = scan(root, test_fraction, tests=not whole)
    base = cache_dir if cache_dir is not None else default_cache_dir()
    return prepare_images(folder_source(layout),
                          base / "folders" / _key(layout, image_size, test_fraction),
                          image_size=image_size, progress=progress, cancel=cancel)


def folder_source(layout: Layout) -> Source:
    """A scanned folder's images to decode, the training split's first."""
    root = layout.root
    items = [Item(e.path, e.label, True) for e in layout.train]
    items += [Item(e.path, e.label, False) for e in layout.test]
    return Source(folder_name(root), str(root), layout.classes, items, layout.skipped,
                  lambda item: root / item.name)


def _key(layout: Layout, image_size: int, test_fraction: float) -> str:
    def rows(entries: tuple[Entry, ...]) -> list[list[Any]]:
        return [[e.path, e.label, e.size, e.mtime_ns] for e in entries]

    text = json.dumps([FORMAT, str(layout.root), layout.classes, image_size, test_fraction,
                       rows(layout.train), rows(layout.test)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
