"""A Hugging Face dataset saved with ``save_to_disk``, as a session's data.

Known by its metadata files, read without importing ``datasets``: a Dataset folder holds
``dataset_info.json`` and ``state.json``, a DatasetDict folder ``dataset_dict.json`` and a
folder per split. Its own train and test splits are used when it has them ("validation"
stands in for a missing "test"); otherwise the test split is held out per class by the
folders' fixed seed. The images of its image column are decoded into the same uint8
cache as a folder's (``image_cache``), keyed by each split's fingerprint and data files,
the columns, the image size and the held-out fraction.

``datasets`` is an optional extra, imported only here and only when such a folder is
read; ``load_from_disk`` reads local files and never downloads.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from ..errors import ConfigError
from ..stored import Damaged, decode_stored
from .folders import UNKNOWN_CLASS, Skipped, folder_name, hold_out_per_class
from .image_cache import FORMAT, Cancel, Item, Prepared, Progress, Source, prepare_images

log = logging.getLogger(__name__)
F = TypeVar("F", bound=msgspec.Struct)

HF_EXTRA = "pip install 'computeshare-desktop[hf]'"
INFO, STATE, DICT = "dataset_info.json", "state.json", "dataset_dict.json"
LABEL_NAMES = ("label", "labels")  # the label column's default, after a ClassLabel column
TEST_SPLITS = ("test", "validation")  # a DatasetDict's test split, in order of preference
NO_LABEL = "a row without a label"
TRAIN, TEST = 0, 1  # an Item's ref: (which split, row)


def is_hf_spec(text: str) -> bool:
    """A dataset spec that names a folder written by ``save_to_disk``."""
    if not text:
        return False
    path = Path(text).expanduser()
    return path.is_dir() and ((path / DICT).is_file()
                              or ((path / INFO).is_file() and (path / STATE).is_file()))


def hf_datasets() -> Any:
    """The ``datasets`` module, or a ConfigError that names the extra to install."""
    try:  # here, not at the top: an optional extra, and one that is slow to import
        import datasets
    except ImportError:
        raise ConfigError(f"reading a Hugging Face dataset needs the datasets library: "
                          f"{HF_EXTRA}") from None
    return datasets


@contextmanager
def quiet_progress() -> Iterator[None]:
    """``datasets``' own progress bars off for a while ("Creating parquet from Arrow
    format" would show through --quiet): our own progress is what people see."""
    hf = hf_datasets()
    was = hf.is_progress_bar_enabled()
    hf.disable_progress_bars()
    try:
        yield
    finally:
        if was:
            hf.enable_progress_bars()


@dataclass(frozen=True, slots=True, eq=False)
class Split:
    """One split of a saved dataset: its name, its rows, and the folder it was read from."""

    name: str
    rows: Any  # datasets.Dataset
    folder: Path


@dataclass(frozen=True, slots=True)
class Columns:
    """The columns a session reads: the image column and the label column."""

    image: str
    label: str


def open_splits(root: Path, *, test: bool = True) -> tuple[Split, Split | None]:
    """The training split and, when ``test``, the dataset's own test split (None: none).

    A DatasetDict without "train" may hold one split, which trains; two or more without
    "train" are refused, naming them.
    """
    root = root.expanduser().absolute()
    loaded = _load(root)
    if not isinstance(loaded, hf_datasets().DatasetDict):
        return _split("train", loaded, root), None
    names = list(loaded)
    if "train" in loaded:
        train = "train"
    elif len(names) == 1:
        train = names[0]
    else:
        raise ConfigError(f"{root} has the splits {', '.join(names)}, none named train: "
                          f"save the training split as train")
    held = next((n for n in TEST_SPLITS if n in loaded and n != train), None)
    first = _split(train, loaded[train], root / train)
    return first, (_split(held, loaded[held], root / held) if held and test else None)


def test_split(root: Path) -> Split:
    """The split of ``root`` that tests (``--test``): a Dataset whole, a DatasetDict's
    "test" (or "validation"), or its only split."""
    root = root.expanduser().absolute()
    loaded = _load(root)
    if not isinstance(loaded, hf_datasets().DatasetDict):
        return _split("test", loaded, root)
    names = list(loaded)
    chosen = next((n for n in TEST_SPLITS if n in loaded), names[0] if len(names) == 1
                  else None)
    if chosen is None:
        raise ConfigError(f"{root} has the splits {', '.join(names)}: a test source needs "
                          f"one named test or validation, or a single split")
    return _split(chosen, loaded[chosen], root / chosen)


def _split(name: str, rows: Any, folder: Path) -> Split:
    """A split with its rows as plain Python values (a format saved with the dataset, such
    as torch tensors, is not ours to read)."""
    return Split(name, rows.with_format(None), folder)


def _load(root: Path) -> Any:
    if not is_hf_spec(str(root)):
        raise ConfigError(f"{root} is not a folder written by save_to_disk (no "
                          f"{DICT}, nor {INFO} with {STATE})")
    try:
        with quiet_progress():
            return hf_datasets().load_from_disk(str(root))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        # AttributeError: datasets' own reader of a damaged dataset_info.json
        raise ConfigError(f"{root} could not be read as a Hugging Face dataset: "
                          f"{exc}") from None


def holds_images(root: Path, input: str = "") -> bool:
    """Whether ``root``'s training split is read as images (``reads_images``)."""
    return reads_images(open_splits(root, test=False)[0], input)


def reads_images(split: Split, input: str = "") -> bool:
    """Whether a session reads images from ``split`` (its ``--input`` column, else its first
    column of Image type) or, without an image column, feature columns as a table."""
    features, hf = split.rows.features, hf_datasets()
    if input and "," not in input and input in features:
        return isinstance(features[input], hf.Image)
    return not input and any(isinstance(f, hf.Image) for f in features.values())


def columns(split: Split, *, input: str = "", label: str = "") -> Columns:
    """The image and label columns: as named, else the first Image column and the label
    column (``label_column``).

    Raises:
        ConfigError: a named column that is not there, no image column, or no label column.
    """
    features = split.rows.features
    known(split, [input] if input else [], "--input")
    image = input or next((n for n in features if isinstance(features[n], hf_datasets().Image)),
                          "")
    if not image:
        raise ConfigError(f"{split.folder} has no image column (its columns: "
                          f"{_listed(list(features))})")
    if not isinstance(features[image], hf_datasets().Image):
        raise ConfigError(f"the column {image!r} of {split.folder} holds "
                          f"{_kind(features[image])}, not images (--input)")
    label = label_column(split, label)
    if label == image:
        raise ConfigError(f"the column {label!r} cannot be both the image and the label")
    return Columns(image, label)


def label_column(split: Split, label: str = "") -> str:
    """The label column: as named (``--label``), else a ClassLabel column, else one named
    label or labels.

    Raises:
        ConfigError: a named column that is not there, or none of those.
    """
    features = split.rows.features
    known(split, [label] if label else [], "--label")
    label = label or next((n for n in features
                           if isinstance(features[n], hf_datasets().ClassLabel)),
                          next((n for n in LABEL_NAMES if n in features), ""))
    if not label:
        raise ConfigError(f"{split.folder} has no ClassLabel column nor one named label: "
                          f"pass --label COLUMN (its columns: {_listed(list(features))})")
    return label


def known(split: Split, names: Sequence[str], flag: str) -> None:
    """Refuse a column ``flag`` names that ``split`` does not have, listing those it has."""
    features = split.rows.features
    for name in names:
        if name not in features:
            raise ConfigError(f"{split.folder} has no column {name!r} ({flag}); its "
                              f"columns: {_listed(list(features))}")


def class_names(split: Split, label: str) -> tuple[str, ...]:
    """The classes in label order: a ClassLabel's names, else the label's distinct values,
    sorted (numbers as numbers)."""
    feature = split.rows.features[label]
    if isinstance(feature, hf_datasets().ClassLabel):
        return tuple(feature.names)
    return tuple(str(v) for v in sorted({v for v in _values(split, label) if v is not None}))


def row_classes(split: Split, label: str) -> list[str | None]:
    """Each row's class name (None: the row has no label)."""
    feature = split.rows.features[label]
    values = _values(split, label)
    if isinstance(feature, hf_datasets().ClassLabel):
        names = feature.names
        return [names[v] if v is not None and 0 <= v < len(names) else None for v in values]
    return [None if v is None else str(v) for v in values]


def _values(split: Split, label: str) -> list[Any]:
    values = list(split.rows[label])
    if any(isinstance(v, (list, dict)) for v in values[:1]):
        raise ConfigError(f"the label column {label!r} of {split.folder} holds "
                          f"{_kind(split.rows.features[label])}, not one class per row")
    if any(isinstance(v, float) and not v.is_integer() for v in values):
        raise ConfigError(f"the label column {label!r} of {split.folder} holds fractional "
                          f"numbers: a classifier needs classes (text or whole numbers)")
    return [int(v) if isinstance(v, float) else v for v in values]


def image_reader(splits: Sequence[Split], image: str) -> Any:
    """Reads an Item's encoded image (ref: (split index, row)) as Pillow opens it."""
    hf = hf_datasets()
    raw = [s.rows.select_columns([image]).cast_column(image, hf.Image(decode=False))
           for s in splits]

    def read(item: Item) -> Any:
        which, row = item.ref
        value = raw[which][row][image] or {}
        if value.get("bytes"):
            return io.BytesIO(value["bytes"])
        path = value.get("path")
        return Path(path) if path and Path(path).is_file() else io.BytesIO(b"")
    return read


def labelled(split: Split, which: int, label: str, classes: Sequence[str],
             skipped: Skipped) -> dict[str, list[Item]]:
    """The split's rows by class name, each an Item labelled by its class's place in
    ``classes``; a row without a label, or of a class not in ``classes``, skipped."""
    index = {name: i for i, name in enumerate(classes)}
    groups: dict[str, list[Item]] = {}
    for row, name in enumerate(row_classes(split, label)):
        where = f"{split.name}[{row}]"
        if name is None:
            skipped.add(NO_LABEL, where)
        elif name not in index:
            skipped.add(UNKNOWN_CLASS, where)
        else:
            groups.setdefault(name, []).append(Item(where, index[name], which == TRAIN,
                                                    (which, row)))
    return groups


def prepare_hf(root: Path, *, image_size: int = 0, test_fraction: float = 0.1,
               input: str = "", label: str = "", whole: bool = False,
               cache_dir: Path, progress: Progress | None = None,
               cancel: Cancel | None = None) -> Prepared:
    """``root``'s images as uint8 N×C×H×W splits. ``whole``: every training row trains
    (another source tests); else its own test split, or one held out per class.

    Raises:
        ConfigError: see ``columns``; a split that is not images; fewer than 2 classes.
        PrepareCancelled: ``cancel()`` said so.
    """
    train, test = open_splits(root, test=not whole)
    chosen = columns(train, input=input, label=label)
    classes = class_names(train, chosen.label)
    if len(classes) < 2:
        raise ConfigError(f"the label column {chosen.label!r} of {train.folder} has "
                          f"{len(classes)} class(es): a classifier needs 2 or more")
    skipped = Skipped()
    groups = labelled(train, TRAIN, chosen.label, classes, skipped)
    kept, held = (hold_out_per_class(groups, test_fraction) if test is None and not whole
                  else ([i for g in groups.values() for i in g], []))
    if test is not None:
        columns(test, input=chosen.image, label=chosen.label)
        held = [i for g in labelled(test, TEST, chosen.label, classes, skipped).values()
                for i in g]
    items = _in_order(kept, True) + _in_order(held, False)
    splits = [train] + ([test] if test is not None else [])
    source = Source(folder_name(root.expanduser().absolute()), str(root), classes, items,
                    skipped, image_reader(splits, chosen.image))
    key = hf_key(splits, chosen, image_size,
                 test_fraction if test is None and not whole else None)
    return prepare_images(source, cache_dir / "hf" / key, image_size=image_size,
                          progress=progress, cancel=cancel)


def _in_order(items: list[Item], train: bool) -> list[Item]:
    """``items`` in row order, in the training split or not."""
    return [Item(i.name, i.label, train, i.ref) for i in sorted(items, key=lambda i: i.ref)]


def hf_key(splits: Sequence[Split], chosen: Columns, *extra: Any) -> str:
    """A cache key: each split's fingerprint and data files (names, sizes, mtimes), the
    columns read, and ``extra`` (the image size, the fraction, a test's target)."""
    text = json.dumps([FORMAT, [_stamp(s) for s in splits], chosen.image, chosen.label,
                       list(extra)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class DataFile(msgspec.Struct):
    """One of a split's Arrow files, as its state.json lists it."""

    filename: str


class SplitState(msgspec.Struct):
    """A split's state.json, which ``datasets`` writes: the two fields a cache key uses
    (its other fields are ignored)."""

    fingerprint: str | None = msgspec.field(default=None, name="_fingerprint")
    data_files: list[DataFile] = msgspec.field(default_factory=list, name="_data_files")


def _stamp(split: Split) -> list[Any]:
    """What says a split's files are the same: its folder, fingerprint and files' stats."""
    files = []
    state = _state(split.folder / STATE)
    for entry in state.data_files:
        path = split.folder / entry.filename
        stat = path.stat() if path.is_file() else None
        files.append([path.name, stat.st_size if stat else -1, stat.st_mtime_ns if stat
                      else -1])
    return [str(split.folder), state.fingerprint, files]


def _state(path: Path) -> SplitState:
    """A split's state.json; an empty one when it is missing or damaged (said: the
    cache is then keyed by the folder and the columns alone)."""
    return dataset_file(path, SplitState(), "its cache is keyed without its fingerprint")


def dataset_file(path: Path, empty: F, instead: str) -> F:
    """A JSON file ``datasets`` wrote (state.json, dataset_info.json...) decoded as
    ``empty``'s type; ``empty`` when it is missing, or damaged (said, with ``instead``:
    what is done without it). The file is the dataset's: no copy is written beside it."""
    try:
        found: F = decode_stored(path, type(empty))
    except FileNotFoundError:
        return empty
    except (Damaged, OSError) as exc:
        log.warning("cannot read %s (%s): %s", path,
                    exc.reason if isinstance(exc, Damaged) else exc, instead)
        return empty
    return found


def _kind(feature: Any) -> str:
    return type(feature).__name__ + (f" ({feature.dtype})" if hasattr(feature, "dtype")
                                     else "")


def _listed(names: list[str], shown: int = 10) -> str:
    text = ", ".join(repr(n) for n in names[:shown])
    return text + (f", … ({len(names)} in all)" if len(names) > shown else "")
