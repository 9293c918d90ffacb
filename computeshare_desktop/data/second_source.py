"""A second source for the test split (``--test SPEC``): a folder of ``CLASS/*`` images, or
a Hugging Face dataset saved with ``save_to_disk``, instead of the test split the training
data would give.

Its classes map to the training classes by name: a test class the training data lacks is
skipped and counted, and labels never shift. Its images are brought to the training
images' size and channels, and decoded once into the same uint8 cache (``image_cache``),
keyed by the files (names, sizes, mtimes; a dataset's fingerprints) and that target.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .arrays import ArrayDataset
from .folders import UNKNOWN_CLASS, Skipped, class_files, is_folder_spec
from .hf import TRAIN, Columns, columns, hf_key, image_reader, is_hf_spec, labelled, test_split
from .image_cache import FORMAT, Cancel, Item, Progress, Source, prepare_images
from .info import DatasetInfo
from .tables import is_table_spec


def prepare_test(spec: str, info: DatasetInfo, *, cache_dir: Path, input: str = "",
                 label: str = "", progress: Progress | None = None,
                 cancel: Cancel | None = None) -> ArrayDataset:
    """``spec``'s images as the test split of data described by ``info`` (the training
    split's: its classes, shape and statistics). ``input``/``label``: a Hugging Face
    dataset's columns (default: as for training).

    Raises:
        ConfigError: ``spec`` is not a folder or a saved dataset; training data that is
            not images; no test image of a training class.
        PrepareCancelled: ``cancel()`` said so.
    """
    if len(info.shape) != 3:
        raise ConfigError(f"--test {spec}: a second test source is read for images; the "
                          f"training data is not images")
    if is_hf_spec(spec):
        source, key = _hf_source(Path(spec), info, input, label)
    elif is_folder_spec(spec):
        source, key = _folder_source(Path(spec), info)
    elif is_table_spec(spec):
        raise ConfigError(f"--test {spec} is a table: the training data is images, so its "
                          f"test source is a folder of CLASS/* images or a saved dataset")
    else:
        raise ConfigError(f"--test {spec}: not a folder of CLASS/* images nor a folder "
                          f"written by save_to_disk")
    if not source.items:
        raise ConfigError(f"--test {spec} has no image of a training class (the training "
                          f"classes: {', '.join(info.class_names[:10])}"
                          f"{', …' if info.num_classes > 10 else ''})")
    prepared = prepare_images(source, cache_dir / "tests" / key, progress=progress,
                              cancel=cancel)
    return ArrayDataset(prepared.test.images, prepared.test.labels, info)


def _folder_source(root: Path, info: DatasetInfo) -> tuple[Source, str]:
    found, skipped = class_files(root)
    index = {name: i for i, name in enumerate(info.class_names)}
    items: list[Item] = []
    rows: list[list[Any]] = []
    for name in sorted(found):
        for path, size, mtime in found[name]:
            if name not in index:
                skipped.add(UNKNOWN_CLASS, path)
                continue
            items.append(Item(path, index[name], False))
            rows.append([path, index[name], size, mtime])
    root = root.expanduser().absolute()
    text = json.dumps([FORMAT, str(root), _target(info), rows])
    source = Source(info.name, str(root), info.class_names, items, skipped,
                    lambda item: root / item.name, shape=_shape(info))
    return source, hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _hf_source(root: Path, info: DatasetInfo, input: str, label: str) -> tuple[Source, str]:
    split = test_split(root)
    chosen: Columns = columns(split, input=input, label=label)
    skipped = Skipped()
    groups = labelled(split, TRAIN, chosen.label, info.class_names, skipped)
    items = sorted((Item(i.name, i.label, False, i.ref) for g in groups.values() for i in g),
                   key=lambda i: i.ref)
    source = Source(info.name, str(root), info.class_names, items, skipped,
                    image_reader([split], chosen.image), shape=_shape(info))
    return source, hf_key([split], chosen, "test", _target(info))


def _shape(info: DatasetInfo) -> tuple[int, int, int]:
    return info.channels, info.height, info.width


def _target(info: DatasetInfo) -> list[Any]:
    """What the test images are prepared for: the training classes and shape."""
    return [list(info.class_names), list(_shape(info))]
