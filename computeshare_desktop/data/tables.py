"""A table (a CSV or a Parquet file) as a session's data: reading its columns as text.

One row per example, one column per feature, and one label column. CSV is read with the
standard library; Parquet needs pyarrow (the ``parquet`` extra), imported only here and
only when a Parquet file is read.
"""

from __future__ import annotations

import csv
import importlib
import itertools
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigError

TABLE_SUFFIXES = (".csv", ".parquet")
PARQUET_EXTRA = "pip install 'computeshare-desktop[parquet]'"
BATCH_ROWS = 8192  # Parquet rows read at once: memory stays bounded whatever the file's size


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


def _csv_rows(path: Path) -> tuple[list[str], Iterator[list[str]]]:
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            header = next(csv.reader(fh), None)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"{path} could not be read as CSV (UTF-8): {exc}") from None
    if not header or not any(name.strip() for name in header):
        raise ConfigError(f"{path} has no header row (the first row names the columns)")
    return [name.strip() for name in header], _csv_body(path, len(header))


def _csv_body(path: Path, width: int) -> Iterator[list[str]]:
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
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
