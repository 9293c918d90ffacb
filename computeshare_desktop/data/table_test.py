"""A table's test split from a second table (``--test PATH.csv|PATH.parquet``), or from a
Hugging Face dataset's own test split written as one, read through the training table's
``Schema``.

Columns are matched by name, so their order may differ; a feature column the test table
lacks is refused by name, and its extra columns are ignored (said in the log). A text
column is one-hot encoded with the TRAINING table's values: a row with a value training
never saw is skipped and counted (a vector of zeros would be a guess the model never
trained on). Labels map to the training classes by value (whole numbers as numbers): a
row of another class is skipped and counted, and labels never shift. Missing values are
refused by column, as in training. The rows are standardized with the training split's
mean and standard deviation, and cached (keyed by both files) like the training table.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import msgspec
import numpy as np

from ..errors import ConfigError
from ..files import atomic_write
from ..stored import Manifest, read_manifest, stored_bytes
from .arrays import ArrayDataset, mapped_splits
from .folders import EXAMPLES, Skipped, is_folder_spec
from .image_cache import Cancel, Progress
from .table_progress import RowWatch
from .tables import BATCH_ROWS, MISSING, count_rows, is_table_spec, read_rows

log = logging.getLogger(__name__)

FORMAT = 1  # the test cache's layout; another one is prepared again
TESTS = "table-tests"  # the cache folder's subfolder of prepared test tables
ROWS, LABELS, META = "rows.f32", "labels.i64", "meta.json"
UNSEEN = "a text value the training table does not have"
UNKNOWN = "a class the training table does not have"


@dataclass(frozen=True, slots=True)
class Schema:
    """How a training table became rows: what its test table is read through."""

    label: str  # the label column's name
    numbered: bool  # the label is whole numbers ("1.0" is class "1")
    classes: tuple[str, ...]  # the classes' values, in label order
    columns: tuple[tuple[str, tuple[str, ...]], ...]  # the feature columns in order, each
    # with its one-hot values (empty: a number column)
    key: str  # the training table's cache key (its file, label and split)


class TableTestMeta(Manifest, kw_only=True):
    """A prepared test table's meta.json (written last: a cut preparation is no cache)."""

    rows: Annotated[int, msgspec.Meta(ge=0)]  # the test rows kept
    skipped: Skipped = msgspec.field(default_factory=Skipped)  # the rows left out, by kind
    source: str = ""  # the test table's path, as the log names it
    train: str = ""  # the training table's cache key


def prepare_table_test(spec: str, train: ArrayDataset, schema: Schema, *, cache_dir: Path,
                       aliases: Sequence[str] = (), progress: Progress | None = None,
                       cancel: Cancel | None = None) -> ArrayDataset:
    """``spec``'s rows as the test split of the table ``train`` (its info: classes,
    statistics) was read from by ``schema``. ``aliases``: other names of the classes, in
    label order (a ClassLabel's names), that a test label may use instead of the values.

    Raises:
        ConfigError: ``spec`` is not a table file; a feature or label column it lacks;
            missing values; a number column holding text; no row of a training class.
        PrepareCancelled: ``cancel()`` said so (``progress``: the rows read); nothing was
            cached.
    """
    if not is_table_spec(spec):
        what = "a folder" if is_folder_spec(spec) else "not a .csv or .parquet file"
        raise ConfigError(f"--test {spec}: the training data is a table, so its test source "
                          f"is a table too (PATH.csv or PATH.parquet); this is {what}")
    path = Path(spec).expanduser().absolute()
    if not path.is_file():
        raise ConfigError(f"--test {spec} is not a file")
    folder = cache_dir / TESTS / _key(path, schema, aliases)
    loaded = _load(folder, train)
    if loaded is None:
        watch = RowWatch(f"the test table {path.name}", count_rows(path), progress=progress,
                         cancel=cancel)
        _build(path, folder, train, schema, aliases, watch)
        loaded = _load(folder, train)
        if loaded is None:
            raise ConfigError(f"the prepared test table {path} could not be read back from "
                              f"{folder}")
    return loaded


def _key(path: Path, schema: Schema, aliases: Sequence[str]) -> str:
    stat = path.stat()
    text = json.dumps([FORMAT, schema.key, str(path), stat.st_size, stat.st_mtime_ns,
                       list(aliases)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _load(folder: Path, train: ArrayDataset) -> ArrayDataset | None:
    """The prepared test rows in ``folder`` (what was skipped said again), or None (a
    damaged meta.json is said and kept aside)."""
    meta = read_manifest(folder / META, TableTestMeta, FORMAT)
    if meta is None:
        return None
    splits = mapped_splits(folder / ROWS, folder / LABELS, train.info, 0, meta.rows)
    if splits is None:
        return None
    for line in meta.skipped.lines():
        log.warning("%s (test table): %s", meta.source or folder, line)
    return splits[1]


def _build(path: Path, folder: Path, train: ArrayDataset, schema: Schema,
           aliases: Sequence[str], watch: RowWatch) -> None:
    """Read, encode and standardize the test table into ``folder`` (the meta last)."""
    reader = _Reader(path, schema, aliases)
    features, labels = reader.read(watch)
    if not len(labels):
        raise ConfigError(f"--test {path.name} has no row the training table can test "
                          f"on: " + "; ".join(reader.skipped.lines()))
    mean = np.asarray(train.info.mean, dtype=np.float64)
    std = np.asarray(train.info.std, dtype=np.float64)
    rows = (features.astype(np.float64) - mean) / std
    watch.check()  # the last chance: from here on the cache is written
    atomic_write(folder / ROWS, np.ascontiguousarray(rows, dtype=np.float32).tobytes())
    atomic_write(folder / LABELS, np.ascontiguousarray(labels, dtype=np.int64).tobytes())
    meta = TableTestMeta(format=FORMAT, rows=len(labels), skipped=reader.skipped,
                         source=str(path), train=schema.key)
    atomic_write(folder / META, stored_bytes(meta))
    for line in reader.skipped.lines():
        log.warning("%s (test table): %s", path, line)
    log.info("%s: prepared %d test rows of %d features (the training split's statistics)",
             path.name, len(labels), features.shape[1])


class _Reader:
    """One pass over a test table: its rows encoded as the training table's were."""

    def __init__(self, path: Path, schema: Schema, aliases: Sequence[str]) -> None:
        self.path, self.schema, self.skipped = path, schema, Skipped()
        self.classes = {name: i for i, name in enumerate(schema.classes)}
        self.aliases = {name: i for i, name in enumerate(aliases)}
        self.slots = [{v: j for j, v in enumerate(values)} for _, values in schema.columns]
        self.width = sum(len(values) or 1 for _, values in schema.columns)
        self.gaps: dict[str, int] = {}

    def read(self, watch: RowWatch) -> tuple[np.ndarray, np.ndarray]:
        """Every kept row's raw features, float32 (N, F), and class index, int64 (N,)."""
        names, rows = read_rows(self.path)
        body = watch.over(rows, "reading")
        where, target = self._match(names)
        chunks, labels = [], []
        chunk = np.empty((BATCH_ROWS, self.width), dtype=np.float32)
        kept = 0
        for number, cells in enumerate(body, start=1):
            label = self._row(number, cells, where, target, chunk[kept])
            if label is None:
                continue
            labels.append(label)
            kept += 1
            if kept == BATCH_ROWS:
                chunks.append(chunk.copy())
                kept = 0
        chunks.append(chunk[:kept].copy())
        if self.gaps:
            raise ConfigError(f"--test {self.path.name} has missing values (empty cells, NaN "
                              f"or infinity), in " + ", ".join(
                                  f"{n!r} ({c:,})" for n, c in self.gaps.items())
                              + ": fill or drop them first")
        return np.concatenate(chunks), np.asarray(labels, dtype=np.int64)

    def _match(self, names: list[str]) -> tuple[list[int], int]:
        """Each feature column's place in the test table, and the label's."""
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigError(f"--test {self.path.name} names more than one column "
                              + ", ".join(repr(n) for n in twice))
        wanted = [name for name, _ in self.schema.columns]
        lacking = [n for n in [*wanted, self.schema.label] if n not in names]
        if lacking:
            raise ConfigError(f"--test {self.path.name} has no column "
                              + ", ".join(repr(n) for n in lacking[:EXAMPLES * 2])
                              + (f" ({len(lacking)} in all)" if len(lacking) > 10 else "")
                              + " of the training table (columns are matched by name)")
        extra = [n for n in names if n not in wanted and n != self.schema.label]
        if extra:
            log.info("%s: columns the training table has not, ignored: %s", self.path.name,
                     ", ".join(repr(n) for n in extra))
        return [names.index(n) for n in wanted], names.index(self.schema.label)

    def _row(self, number: int, cells: list[str], where: list[int], target: int,
             out: np.ndarray) -> int | None:
        """Encode one row into ``out``; its class index, or None when it is left out."""
        unseen = ""
        at = 0
        out[:] = 0.0
        for (name, values), slot, column in zip(self.schema.columns, self.slots, where,
                                                strict=True):
            text = cells[column].strip()
            if self._missing(name, text):
                at += len(values) or 1
                continue
            if values:
                if text in slot:
                    out[at + slot[text]] = 1.0
                elif not unseen:
                    unseen = f"row {number}: {name}={text!r}"
                at += len(values)
            else:
                out[at] = self._number(name, text, number)
                at += 1
        label = cells[target].strip()
        if self._missing(self.schema.label, label) or self.gaps:
            return None
        if unseen:
            self.skipped.add(UNSEEN, unseen)
            return None
        index = self._class(label)
        if index is None:
            self.skipped.add(UNKNOWN, f"row {number}: {label!r}")
        return index

    def _missing(self, name: str, text: str) -> bool:
        number = _float(text)
        if text.lower() in MISSING or (number is not None and not math.isfinite(number)):
            self.gaps[name] = self.gaps.get(name, 0) + 1
            return True
        return False

    def _number(self, name: str, text: str, number: int) -> float:
        value = _float(text)
        if value is None:
            raise ConfigError(f"--test {self.path.name}: {name!r} is a number column in the "
                              f"training table, but row {number} holds {text!r}")
        return value

    def _class(self, text: str) -> int | None:
        value = _float(text)
        if self.schema.numbered and value is not None and value.is_integer():
            text = str(int(value))
        found = self.classes.get(text)
        return found if found is not None else self.aliases.get(text)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
