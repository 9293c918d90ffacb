"""A table (a CSV or a Parquet file) as a session's data: reading its columns as text.

One row per example, one column per feature, and one label column. CSV is read with the
standard library; Parquet needs pyarrow (the ``parquet`` extra), imported only here and
only when a Parquet file is read.
"""

from __future__ import annotations

import csv
import importlib
import itertools
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import ConfigError

log = logging.getLogger(__name__)

TABLE_SUFFIXES = (".csv", ".parquet")
PARQUET_EXTRA = "pip install 'computeshare-desktop[parquet]'"
BATCH_ROWS = 8192  # Parquet rows read at once: memory stays bounded whatever the file's size
CHUNK_BYTES = 1 << 20  # a CSV's bytes read at once to count its lines
SNIFF_BYTES = 16 << 10  # a CSV's first bytes read to tell its delimiter
DELIMITERS = ",;\t|"  # the delimiters a CSV may use (a comma unless its head says otherwise)


class RowWatch(Protocol):
    """Counts a pass's rows as they are read, and may cancel it (``table_progress``: it
    stands on the image cache, which stands on this module through ``folders``)."""

    def over(self, rows: Iterator[list[str]], verb: str,
             total: int = 0) -> Iterator[list[str]]:
        """``rows`` as they are, counted (``total``: the pass's rows, when known)."""
        ...


def is_table_spec(text: str) -> bool:
    """A dataset spec that names a table: it ends in .csv or .parquet (any case)."""
    return bool(text) and text.strip().lower().endswith(TABLE_SUFFIXES)


def is_parquet(path: Path) -> bool:
    """Whether ``path`` is read as Parquet (else as CSV)."""
    return path.suffix.lower() == ".parquet"


def read_head(path: Path, rows: int = 5) -> tuple[list[str], list[list[str]]]:
    """The column names and the first ``rows`` rows as text (a missing cell is "").

    Raises:
        ConfigError: the file is missing or unreadable, has no columns, or is Parquet and
            pyarrow is not installed.
    """
    columns, body = read_rows(path)
    return columns, [list(row) for row in itertools.islice(body, max(0, rows))]


def read_rows(path: Path) -> tuple[list[str], Iterator[list[str]]]:
    """The column names and an iterator over every row as text, read as it goes."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"{path} is not a file")
    if is_parquet(path):
        return _parquet_rows(path)
    return _csv_rows(path)


def count_rows(path: Path) -> int:
    """About how many rows the table holds, cheaply: Parquet's own count, or a CSV's line
    breaks less the header (more than its rows when it has blank lines or quoted line
    breaks)."""
    if is_parquet(path):
        return int(_parquet_file(path).metadata.num_rows)
    breaks, last = 0, b"\n"
    try:
        with Path(path).open("rb") as fh:
            while chunk := fh.read(CHUNK_BYTES):
                breaks, last = breaks + chunk.count(b"\n"), chunk[-1:]
    except OSError as exc:
        raise ConfigError(f"{path} could not be read: {exc}") from None
    return max(0, breaks - 1 + (last != b"\n"))


def csv_delimiter(path: Path) -> str:
    """The delimiter of the CSV at ``path``, told from its first SNIFF_BYTES (one of
    DELIMITERS; a comma when its head says nothing clear)."""
    try:
        with Path(path).open(encoding="utf-8-sig", newline="") as fh:
            head = fh.read(SNIFF_BYTES)
    except (OSError, UnicodeDecodeError):
        return ","  # reading it again says why
    if len(head) == SNIFF_BYTES and "\n" in head:  # a cut last line misleads the sniffer
        head = head[:head.rindex("\n")]
    try:
        found = csv.Sniffer().sniff(head, delimiters=DELIMITERS).delimiter
    except csv.Error:
        return ","
    first = head.splitlines()[0] if head else ""
    return found if found in DELIMITERS and found in first else ","


def delimiter_name(delimiter: str) -> str:
    """A delimiter for people: "a semicolon", "a tab"..."""
    return {",": "a comma", ";": "a semicolon", "\t": "a tab", "|": "a vertical bar"
            }.get(delimiter, repr(delimiter))


def _csv_rows(path: Path) -> tuple[list[str], Iterator[list[str]]]:
    delimiter = csv_delimiter(path)
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            header = next(csv.reader(fh, delimiter=delimiter), None)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"{path} could not be read as CSV (UTF-8): {exc}") from None
    if not header or not any(name.strip() for name in header):
        raise ConfigError(f"{path} has no header row (the first row names the columns)")
    return [name.strip() for name in header], _csv_body(path, len(header), delimiter)


def _csv_body(path: Path, width: int, delimiter: str = ",") -> Iterator[list[str]]:
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            next(reader, None)
            for row in reader:
                if not row:  # a blank line is no example
                    continue
                if len(row) != width:
                    raise ConfigError(f"{path}: line {reader.line_num} has {len(row)} "
                                      f"cells, the header names {width} columns")
                yield row
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"{path} could not be read as CSV (UTF-8): {exc}") from None


def pyarrow_parquet() -> Any:
    """``pyarrow.parquet``, or a ConfigError that names the extra to install."""
    try:  # by name: pyarrow ships no type information, and it is an optional extra
        return importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise ConfigError(f"reading Parquet files needs pyarrow: {PARQUET_EXTRA}") from None


def _parquet_file(path: Path) -> Any:
    pq = pyarrow_parquet()
    try:
        return pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid and OSError kinds
        raise ConfigError(f"{path} could not be read as Parquet: {exc}") from None


def _parquet_rows(path: Path) -> tuple[list[str], Iterator[list[str]]]:
    columns = list(_parquet_file(path).schema_arrow.names)
    if not columns:
        raise ConfigError(f"{path} has no columns")
    return columns, _parquet_body(path)


def _parquet_body(path: Path) -> Iterator[list[str]]:
    for batch in _parquet_file(path).iter_batches(batch_size=BATCH_ROWS):
        values = [column.to_pylist() for column in batch.columns]
        for row in zip(*values, strict=True):
            yield [cell_text(cell) for cell in row]


def cell_text(cell: object) -> str:
    """A Parquet cell as a CSV would hold it: "" for a missing value (None or NaN)."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return ""
    if isinstance(cell, bool):
        return "1" if cell else "0"
    return str(cell)


MAX_ONE_HOT = 16  # a text column with at most this many values is one-hot encoded
MISSING = frozenset({"", "nan"})  # a cell that holds no value (after strip, lower case)


@dataclass(slots=True)
class _Column:
    """What the first pass learns of one column."""

    name: str
    missing: int = 0
    numeric: bool = True
    whole: bool = True  # every number is an integer
    values: set[str] = field(default_factory=set)  # the distinct values (a number
    # column's: only the first few, unless ``every``)
    every: bool = False  # keep every distinct value (the label's)
    partial: bool = False  # it turned to text after more values than were kept

    def see(self, cell: str) -> None:
        text = cell.strip()
        if text.lower() in MISSING:
            self.missing += 1
            return
        if self.numeric:
            number = _number(text)
            if number is not None and not math.isfinite(number):  # inf: no usable value
                self.missing += 1
                return
            if number is None:
                self.numeric = False
                self.partial = len(self.values) > MAX_ONE_HOT and not self.every
            else:
                self.whole = self.whole and number.is_integer()
        if self.every or not self.numeric or len(self.values) <= MAX_ONE_HOT:
            self.values.add(text)

    def counted(self) -> str:
        """How many distinct values, for a person."""
        return f"{'over ' if self.partial else ''}{len(self.values):,} values"


@dataclass(frozen=True, slots=True)
class TableLayout:
    """How a table becomes examples: the label column and its classes, the features."""

    path: Path
    rows: int
    label: str
    classes: tuple[str, ...]  # the label's distinct values, sorted (numbers as numbers)
    numbered: bool  # the label is whole numbers (read as such: "1.0" is class "1")
    features: tuple[str, ...]  # the feature names, a one-hot column as "COLUMN=VALUE"
    sources: tuple[tuple[int, tuple[str, ...]], ...]  # per feature column: its index in
    # the file and, for a one-hot column, its values in order (empty: a number)
    encoded: tuple[str, ...]  # the text columns that were one-hot encoded


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def scan_table(path: Path, label: str = "", watch: RowWatch | None = None,
               input: str = "") -> TableLayout:
    """Read the table once and decide how it becomes examples (``label``: the label
    column's name, default the last column; ``input``: the feature columns, comma-
    separated, default every column but the label; ``watch``: counts the rows read, may
    cancel).

    Raises:
        ConfigError: no such label or input column; no row; a label with fewer than 2
            values or with fractional numbers; missing values (each column named, with a
            count); a text feature column with more than MAX_ONE_HOT values; no feature
            column.
    """
    names, body = read_rows(path)
    if not is_parquet(path) and (delimiter := csv_delimiter(path)) != ",":
        log.info("%s: read with %s as its delimiter", path.name, delimiter_name(delimiter))
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"{path.name} names more than one column {_listed(twice)}")
    label = label or names[-1]
    if label not in names:
        raise ConfigError(f"{path.name} has no column {label!r} (--label); its columns: "
                          f"{_listed(names)}")
    used = _inputs(path, names, input, label)
    columns = [_Column(name, every=name == label) for name in names]
    rows = 0
    for row in body if watch is None else watch.over(body, "checking"):
        rows += 1
        for column, cell, read in zip(columns, row, used, strict=True):
            if read:
                column.see(cell)
    if rows == 0:
        raise ConfigError(f"{path} has a header but no rows")
    _refuse_missing(path, columns)
    target = columns[names.index(label)]
    classes = _classes(path, target, rows)
    sources, features, encoded = _features(
        path, [c if read else None for c, read in zip(columns, used, strict=True)],
        names.index(label))
    return TableLayout(path, rows, label, classes, target.numeric, tuple(features),
                       tuple(sources), tuple(encoded))


def _inputs(path: Path, names: list[str], input: str, label: str) -> list[bool]:
    """Per column, whether it is read: the label and ``input``'s columns (comma-separated;
    none named: every column)."""
    named = [n.strip() for n in input.split(",") if n.strip()]
    if not named:
        return [True] * len(names)
    unknown = [n for n in named if n not in names]
    if unknown:
        raise ConfigError(f"{path.name} has no column {_listed(unknown)} (--input); its "
                          f"columns: {_listed(names)}")
    if label in named:
        raise ConfigError(f"the column {label!r} cannot be both a feature (--input) and the "
                          f"label")
    return [n in named or n == label for n in names]


def _refuse_missing(path: Path, columns: list[_Column]) -> None:
    gaps = [f"{c.name!r} ({c.missing:,})" for c in columns if c.missing]
    if gaps:
        raise ConfigError(f"{path.name} has missing values (empty cells, NaN or infinity), in "
                          f"{', '.join(gaps)}: fill or drop them first")


def _classes(path: Path, target: _Column, rows: int) -> tuple[str, ...]:
    if target.numeric and not target.whole:
        raise ConfigError(f"the label column {target.name!r} of {path.name} holds fractional "
                          f"numbers: a classifier needs classes (text or whole numbers)")
    if len(target.values) < 2:
        raise ConfigError(f"the label column {target.name!r} of {path.name} has "
                          f"{len(target.values)} value(s) in {rows:,} rows: a classifier "
                          f"needs 2 classes or more")
    if target.numeric:
        return tuple(str(n) for n in sorted({int(float(v)) for v in target.values}))
    return tuple(sorted(target.values))


def _features(path: Path, columns: list[_Column | None], label: int
              ) -> tuple[list[tuple[int, tuple[str, ...]]], list[str], list[str]]:
    """The feature columns (None: a column not read, see ``_inputs``)."""
    sources: list[tuple[int, tuple[str, ...]]] = []
    features: list[str] = []
    encoded: list[str] = []
    many = [c for i, c in enumerate(columns) if c is not None and i != label
            and not c.numeric and len(c.values) > MAX_ONE_HOT]
    if many:
        raise ConfigError(
            f"{path.name} has text columns with too many values to one-hot encode (at most "
            f"{MAX_ONE_HOT}): " + ", ".join(f"{c.name!r} ({c.counted()})"
                                            for c in many)
            + ": turn them into numbers, or drop them")
    for i, column in enumerate(columns):
        if i == label or column is None:
            continue
        if column.numeric:
            sources.append((i, ()))
            features.append(column.name)
        else:
            values = tuple(sorted(column.values))
            sources.append((i, values))
            features += [f"{column.name}={value}" for value in values]
            encoded.append(column.name)
    if not features:
        target = columns[label]
        assert target is not None  # the label is always read
        raise ConfigError(f"{path.name} has no feature column besides the label "
                          f"{target.name!r}")
    return sources, features, encoded


def _listed(names: list[str], shown: int = 10) -> str:
    text = ", ".join(repr(n) for n in names[:shown])
    return text + (f", … ({len(names)} in all)" if len(names) > shown else "")


def read_table(layout: TableLayout, watch: RowWatch | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """The second pass: every row's features as float32 (N, F), in the layout's order,
    and its label as the class's index, int64 (N,) (``watch``: counts them, may cancel)."""
    features = np.empty((layout.rows, len(layout.features)), dtype=np.float32)
    labels = np.empty(layout.rows, dtype=np.int64)
    names, body = read_rows(layout.path)
    if watch is not None:
        body = watch.over(body, "reading", layout.rows)
    target = names.index(layout.label)
    classes = {name: i for i, name in enumerate(layout.classes)}
    slots = [{value: j for j, value in enumerate(values)} for _, values in layout.sources]
    row = -1
    try:
        for row, cells in enumerate(body):
            text = cells[target].strip()
            labels[row] = classes[str(int(float(text))) if layout.numbered else text]
            _encode(cells, layout, slots, features[row])
    except (KeyError, ValueError, IndexError):
        row = -2
    if row + 1 != layout.rows:
        raise ConfigError(f"{layout.path.name} changed while it was read")
    return features, labels


def _encode(cells: list[str], layout: TableLayout, slots: list[dict[str, int]],
            out: np.ndarray) -> None:
    """One row's features into ``out``: numbers as they are, a text value as its one-hot."""
    out[:] = 0.0
    at = 0
    for (column, values), slot in zip(layout.sources, slots, strict=True):
        cell = cells[column].strip()
        if values:
            out[at + slot[cell]] = 1.0
            at += len(values)
        else:
            out[at] = float(cell)
            at += 1
