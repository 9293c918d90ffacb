"""A table prepared once: its rows encoded (numbers, one-hot text columns), split, and
standardized into a float32 file in the cache folder, then memory-mapped by every session
on the same file.

The cache is keyed by the file's path, size and mtime, the label column asked for and the
held-out fraction (or none held out: ``whole``, when a second table tests, see
``table_test``). The per-feature mean and standard deviation come from the training
split; the rows are stored standardized with them (a session trains on them as they are)
and the statistics stay in the ``DatasetInfo`` for the exported model, which takes raw
values. ``meta.json`` is written last: a cut preparation is no cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import msgspec
import numpy as np

from ..errors import ConfigError
from ..files import atomic_write
from ..stored import Manifest, read_manifest, stored_bytes
from .arrays import ArrayDataset, mapped_splits
from .factory import default_cache_dir
from .folders import folder_name, hold_out_per_class
from .image_cache import Cancel, Progress
from .info import DatasetInfo, table_info
from .mapped import DIGITS, MIN_STD
from .table_test import Schema
from .table_progress import RowWatch
from .tables import TableLayout, count_rows, read_head, read_table, scan_table

log = logging.getLogger(__name__)

FORMAT = 2  # the cache's layout; another one is prepared again
ROWS, LABELS, META = "rows.f32", "labels.i64", "meta.json"


@dataclass(frozen=True, slots=True, eq=False)
class PreparedTable:
    """A table's two splits and whether the cache had them."""

    train: ArrayDataset
    test: ArrayDataset
    cached: bool
    schema: Schema  # how the rows were read: what a test table is read through

    @property
    def features(self) -> tuple[str, ...]:
        """The feature names: COLUMN, or COLUMN=VALUE for a one-hot text column."""
        return self.train.info.features


def table_name(path: Path) -> str:
    """The data's name for people and workers: the file's name without its suffix."""
    return folder_name(Path(path).with_suffix(""))


def prepare_table(path: Path, *, label: str = "", test_fraction: float = 0.1,
                  cache_dir: Path | None = None, whole: bool = False,
                  progress: Progress | None = None, cancel: Cancel | None = None,
                  input: str = "") -> PreparedTable:
    """``path``'s rows as standardized float32 N×F splits, labels as class indices.
    ``input``: the feature columns, comma-separated (default: every column but the label).
    ``whole``: every row trains (another source tests; the test split is empty).
    ``progress``: the rows read, over both passes; ``cancel``: checked as they are read.

    Raises:
        ConfigError: as ``tables.scan_table`` says, or no row could be held out for
            testing.
        PrepareCancelled: ``cancel()`` said so; nothing was cached.
    """
    path = Path(path).expanduser().absolute()
    if not path.is_file():
        raise ConfigError(f"{path} is not a file")
    base = cache_dir if cache_dir is not None else default_cache_dir()
    folder = base / "tables" / _key(path, label, None if whole else test_fraction, input)
    prepared = _load(folder)
    if prepared is None:
        watch = RowWatch(path.name, count_rows(path), passes=2, progress=progress,
                         cancel=cancel)
        _build(path, folder, label, None if whole else test_fraction, watch, input)
        prepared = _load(folder)
        if prepared is None:
            raise ConfigError(f"the prepared table {path} could not be read back from "
                              f"{folder}")
        return dataclasses.replace(prepared, cached=False)
    log.info("%s: prepared table loaded from the cache (%d train, %d test rows, %d "
             "features)", path, len(prepared.train), len(prepared.test),
             len(prepared.features))
    return prepared


def _key(path: Path, label: str, test_fraction: float | None, input: str = "") -> str:
    stat = path.stat()
    columns = [n.strip() for n in input.split(",") if n.strip()]
    text = json.dumps([FORMAT, str(path), stat.st_size, stat.st_mtime_ns, label,
                       test_fraction] + ([columns] if columns else []))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class TableMeta(Manifest, kw_only=True):
    """A prepared table's meta.json (written last: a cut preparation is no cache)."""

    name: str  # the data's name (``table_name``)
    label: str = ""  # the label column
    classes: tuple[str, ...]  # in label order
    features: tuple[str, ...]  # COLUMN, or COLUMN=VALUE for a one-hot text column
    encoded: tuple[str, ...] = ()  # the one-hot encoded text columns
    train: Annotated[int, msgspec.Meta(ge=0)]  # the rows of each split, training first
    test: Annotated[int, msgspec.Meta(ge=0)]
    mean: tuple[float, ...]  # per feature, from the training split
    std: tuple[float, ...]
    source: str = ""  # the table's path, as the log names it
    schema: Schema  # how the rows were read (its key: the cache folder's name, on loading)

    def __post_init__(self) -> None:
        self.info()  # a ValueError here: the manifest is damaged (msgspec says which)

    def info(self) -> DatasetInfo:
        """The table's info, statistics included."""
        return table_info(self.name, len(self.features), len(self.classes), self.mean,
                          self.std, self.classes, self.features)


def _load(folder: Path) -> PreparedTable | None:
    """The cache in ``folder``, or None when it is not (wholly) there (a damaged
    meta.json is said and kept aside)."""
    meta = read_manifest(folder / META, TableMeta, FORMAT)
    if meta is None:
        return None
    splits = mapped_splits(folder / ROWS, folder / LABELS, meta.info(), meta.train, meta.test)
    schema = dataclasses.replace(meta.schema, key=folder.name)
    return None if splits is None else PreparedTable(*splits, cached=True, schema=schema)


def _build(path: Path, folder: Path, label: str, test_fraction: float | None,
           watch: RowWatch, input: str = "") -> None:
    """Read, encode, split and standardize the table into ``folder`` (the meta last)."""
    started = time.monotonic()
    layout = scan_table(path, label, watch, input)
    for column in layout.encoded:
        names = [n for n in layout.features if n.startswith(f"{column}=")]
        log.info("%s: the text column %r is one-hot encoded as %d features (%s)",
                 path.name, column, len(names), ", ".join(names))
    features, labels = read_table(layout, watch)
    train, test = (split(labels, len(layout.classes), test_fraction)
                   if test_fraction is not None
                   else (np.arange(len(labels)), np.arange(0)))
    if len(test) == 0 and test_fraction is not None:
        raise ConfigError(f"{path.name} has no class with 2 rows or more: no row can be "
                          f"held out for testing")
    mean, std = statistics(features[train])
    ordered = np.concatenate([train, test])
    rows = (features[ordered].astype(np.float64) - mean) / std
    watch.check()  # the last chance: from here on the cache is written
    atomic_write(folder / ROWS, np.ascontiguousarray(rows, dtype=np.float32).tobytes())
    atomic_write(folder / LABELS, np.ascontiguousarray(labels[ordered]).tobytes())
    meta = TableMeta(format=FORMAT, name=table_name(path), label=layout.label,
                     classes=tuple(layout.classes), features=tuple(layout.features),
                     encoded=tuple(layout.encoded), train=len(train), test=len(test),
                     mean=tuple(float(m) for m in mean), std=tuple(float(s) for s in std),
                     source=str(path), schema=_schema(layout))
    atomic_write(folder / META, stored_bytes(meta))
    log.info("%s: prepared %d rows (%d train, %d test) of %d features and %d classes in "
             "%.1f s", path.name, layout.rows, len(train), len(test), len(layout.features),
             len(layout.classes), time.monotonic() - started)


def _schema(layout: TableLayout) -> Schema:
    """What a test table is read through (its key: the cache folder's name, on loading)."""
    names = read_head(layout.path, rows=0)[0]
    return Schema(layout.label, layout.numbered, layout.classes,
                  tuple((names[i], values) for i, values in layout.sources), "")


def split(labels: np.ndarray, classes: int, fraction: float) -> tuple[np.ndarray,
                                                                      np.ndarray]:
    """Row indices of the training and test splits, each in file order: stratified, each
    class holding out ``fraction`` of its rows by the folders' fixed seed
    (``folders.hold_out_per_class``)."""
    groups = {f"{c:09d}": np.flatnonzero(labels == c).tolist() for c in range(classes)}
    train, test = hold_out_per_class(groups, fraction)
    return np.array(sorted(train), dtype=np.int64), np.array(sorted(test), dtype=np.int64)


def statistics(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature mean and standard deviation (floored at MIN_STD), rounded as a
    session's statistics are."""
    values = rows.astype(np.float64)
    mean = np.round(values.mean(axis=0), DIGITS)
    std = np.round(np.maximum(values.std(axis=0), MIN_STD), DIGITS)
    return mean, std
