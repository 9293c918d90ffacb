"""A Hugging Face dataset saved with ``save_to_disk`` whose examples are feature columns (no
image column), read as a table.

Its training rows are written once to a Parquet file in the cache folder (keyed by the
split's fingerprint and data files and the columns read), which the table path
(``table_cache``) then encodes, splits per class, standardizes and caches like any table:
numbers as they are, a text column of few values one-hot encoded, missing values refused
by column. The classes keep a ClassLabel's names; rows without a label (ClassLabel -1) are
left out and counted in the log. A DatasetDict's own test (or validation) split, or a
``--test`` table, is read as the test split through the training table's schema
(``table_test``): all the training rows then train.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from ..errors import ConfigError
from ..files import atomic_write
from .arrays import ArrayDataset
from .folders import folder_name
from .hf import (Columns, Split, hf_datasets, hf_key, known, label_column, open_splits,
                 quiet_progress)
from .image_cache import Cancel, Progress
from .table_cache import PreparedTable, prepare_table
from .table_test import prepare_table_test

log = logging.getLogger(__name__)

TABLES = "hf-tables"  # the cache folder's subfolder of Parquet files


def prepare_hf_table(root: Path, *, test_fraction: float = 0.1, input: str = "",
                     label: str = "", cache_dir: Path, test_spec: str = "",
                     progress: Progress | None = None,
                     cancel: Cancel | None = None) -> PreparedTable:
    """``root``'s feature columns (``input``: a comma-separated list; default every column
    but the label) as a table's standardized float32 train and test splits.

    The test split is ``test_spec``'s table, else the DatasetDict's own test (or
    validation) split, else held out per class (``test_fraction``). ``progress`` and
    ``cancel``: as the table path's (``table_cache.prepare_table``).

    Raises:
        ConfigError: a named column that is not there, a feature column that is not a
            number or a text, no label column, or what the table path refuses.
        PrepareCancelled: ``cancel()`` said so.
    """
    root = root.expanduser().absolute()
    train, test = open_splits(root, test=not test_spec)
    target = label_column(train, label)
    features = feature_columns(train, input, target)
    path = _parquet(root, train, features, target, cache_dir)
    prepared = prepare_table(path, label=target, test_fraction=test_fraction,
                             cache_dir=cache_dir, whole=bool(test_spec) or test is not None,
                             progress=progress, cancel=cancel)
    names = _label_names(train, target)
    tested = prepared.test
    if test_spec or test is not None:
        tested = prepare_table_test(test_spec or _test_parquet(root, test, features, target,
                                                               names, cache_dir),
                                    prepared.train, prepared.schema, cache_dir=cache_dir,
                                    aliases=names, progress=progress, cancel=cancel)
    if not names:
        return dataclasses.replace(prepared, test=tested)
    info = dataclasses.replace(prepared.train.info, classes=tuple(
        names[int(c)] for c in prepared.train.info.class_names))
    return dataclasses.replace(
        prepared, train=ArrayDataset(prepared.train.images, prepared.train.labels, info),
        test=ArrayDataset(tested.images, tested.labels, info))


def _test_parquet(root: Path, test: Split | None, features: list[str], label: str,
                  names: Sequence[str], cache_dir: Path) -> str:
    """The dataset's own test split as a Parquet file of the training split's columns
    (a ClassLabel there must name the classes as the training split's does)."""
    assert test is not None
    known(test, [*features, label], "a column of the training split")
    own = list(_label_names(test, label))
    if own and own != list(names):
        raise ConfigError(f"the label column {label!r} of {test.folder} names other classes "
                          f"than the training split's: {own} against {list(names)}")
    return str(_parquet(root, test, features, label, cache_dir))


def feature_columns(split: Split, input: str, label: str) -> list[str]:
    """The feature columns: those ``input`` names (comma-separated), else every column but
    the label; each must hold one number or text per row."""
    features = split.rows.features
    named = [n.strip() for n in input.split(",") if n.strip()]
    known(split, named, "--input")
    chosen = named or [n for n in features if n != label]
    if label in chosen:
        raise ConfigError(f"the column {label!r} cannot be both a feature and the label")
    hf = hf_datasets()
    odd = [n for n in chosen if not isinstance(features[n], hf.Value | hf.ClassLabel)]
    if odd:
        raise ConfigError(f"{split.folder}: a table's features are numbers or text, one per "
                          f"row; " + ", ".join(f"{n!r} holds {type(features[n]).__name__}"
                                               for n in odd)
                          + " (choose the feature columns with --input A,B,...)")
    if not chosen:
        raise ConfigError(f"{split.folder} has no feature column besides the label {label!r}")
    return chosen


def _label_names(split: Split, label: str) -> Sequence[str]:
    """A ClassLabel's names (the table path saw its numbers), else none."""
    feature = split.rows.features[label]
    return feature.names if isinstance(feature, hf_datasets().ClassLabel) else ()


def _parquet(root: Path, split: Split, features: list[str], label: str,
             cache_dir: Path) -> Path:
    """The split's labelled rows of those columns as a Parquet file in the cache (written
    once: its name and folder are the table cache's key)."""
    key = hf_key([split], Columns(",".join(features), label), "table")
    path = cache_dir / TABLES / key / f"{folder_name(root)}.parquet"
    if path.is_file():
        return path
    rows = split.rows.select_columns([*features, label])
    if _label_names(split, label):
        values = list(rows[label])
        kept = [i for i, v in enumerate(values) if v is not None and v >= 0]
        if len(kept) < len(values):
            log.warning("%s: %d rows without a label left out", root, len(values) - len(kept))
            rows = rows.select(kept, keep_in_memory=True)

    def write(fh: BinaryIO) -> None:
        with quiet_progress():
            rows.to_parquet(fh)
    atomic_write(path, write)
    return path
