"""A session's data prepared before the session opens, for the Host dialog and the hub's
thread alike: progress as it goes, a way to cancel, and what was skipped. No Qt.

A folder of images, or a Hugging Face dataset's images, is decoded once into the cache
(``data.prepared``), and a table (a CSV or Parquet file, a saved dataset's feature
columns) is encoded into it; the session then finds it there at once. Built-in names are
loaded by the session itself (with its own lines), so ``prepare`` leaves them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..data import DatasetInfo
from ..data.folders import is_folder_spec
from ..data.factory import default_cache_dir
from ..data.hf import is_hf_spec, prepare_hf
from ..data.image_cache import DEFAULT_SIZE as DEFAULT_SIDE
from ..data.prepared import (Cancel, Progress, PrepareProgress, check_options, is_table_data,
                             prepare_folder, prepare_table_data)
from ..data.tables import is_table_spec
from ..events import LogLine
from ..pacing import Throttle

LINE_EVERY_S = 2.0  # a preparation's progress as a log line this often (and its last)


@dataclass(frozen=True, slots=True)
class DataReport:
    """What a preparation gave: the splits' sizes, whether the cache had them, the skips."""

    name: str
    train: int
    test: int
    cached: bool
    skipped: tuple[str, ...]  # one line per kind: "skipped 3 (not an image file): a.txt"
    unit: str = "images"  # what the splits count: "images", or a table's "rows"
    choices: tuple[str, ...] = ()  # what was chosen for the host: the image size, encodings

    def lines(self) -> list[str]:
        """What to tell the host, one line each: the splits, the skips once, as a summary
        (first letter up; the details are in the log file), then what was chosen."""
        how = "found in the cache" if self.cached else "prepared"
        return ([f"{self.name}: {self.train:,} training and {self.test:,} test {self.unit} "
                 f"{how}"] + [line[:1].upper() + line[1:] for line in self.skipped]
                + list(self.choices))


def image_choice(info: DatasetInfo, count: int, image_size: int) -> str:
    """The line saying the image size and channels the images were brought to."""
    if image_size:  # words for the app and the command line alike: no flag, no field name
        why = "the image size chosen"
    elif (info.height, info.width) == (DEFAULT_SIDE, DEFAULT_SIDE):
        why = f"{DEFAULT_SIDE} when sizes differ; set the image size to choose"
    else:
        why = "their own size; set the image size to choose"
    channels = "1 channel" if info.channels == 1 else f"{info.channels} channels"
    return f"{info.name}: {count:,} images at {info.height}×{info.width}, {channels} ({why})"


def table_choices(info: DatasetInfo) -> tuple[str, ...]:
    """One line per text column one-hot encoded (its features are named COLUMN=VALUE)."""
    counts: dict[str, int] = {}
    for name in info.features:
        column, sep, _ = name.partition("=")
        if sep:
            counts[column] = counts.get(column, 0) + 1
    return tuple(f"{column!r} is one-hot encoded as {n} features"
                 for column, n in counts.items())


def needs_preparing(spec: str) -> bool:
    """True for the specs ``prepare`` prepares: a folder of images, a Hugging Face dataset
    saved with ``save_to_disk`` (its images, or its feature columns as a table), or a
    table file."""
    return is_folder_spec(spec) or is_table_spec(spec)


def prepare(spec: str, *, image_size: int = 0, test_fraction: float = 0.1,
            progress: Progress | None = None, cancel: Cancel | None = None,
            cache_dir: Path | None = None, test_spec: str = "", label: str = "",
            input: str = "") -> DataReport | None:
    """Prepare ``spec``'s images or table into the cache (or find them there) with the
    options the session loads them with (see ``data.prepared.load_data``); None when the
    session loads the data itself (a built-in). ``test_spec`` (``--test``): another source
    tests, so all of ``spec`` trains (a table's test table is prepared here too; another
    test source is the session's to prepare).

    Raises:
        ConfigError: the folder cannot be a session's data (the reason says why).
        PrepareCancelled: ``cancel()`` said so; nothing was cached.
    """
    check_options(spec, image_size=image_size, label=label, input=input)
    if not needs_preparing(spec):
        return None
    root, whole = Path(spec), bool(test_spec)
    if is_table_data(spec, input):
        table = prepare_table_data(spec, test_fraction=test_fraction, label=label,
                                   input=input, test_spec=test_spec, cache_dir=cache_dir,
                                   progress=progress, cancel=cancel)
        return DataReport(table.train.info.name, len(table.train), len(table.test),
                          table.cached, (), unit="rows", choices=table_choices(table.train.info))
    if is_hf_spec(spec):
        prepared = prepare_hf(root, image_size=image_size, test_fraction=test_fraction,
                              input=input, label=label, whole=whole,
                              cache_dir=cache_dir or default_cache_dir(), progress=progress,
                              cancel=cancel)
    else:
        prepared = prepare_folder(root, image_size=image_size, test_fraction=test_fraction,
                                  cache_dir=cache_dir, progress=progress, cancel=cancel,
                                  whole=whole)
    train, test = len(prepared.train), len(prepared.test)
    choice = image_choice(prepared.train.info, train + test, image_size)
    return DataReport(prepared.train.info.name, train, test, prepared.cached,
                      tuple(prepared.skipped.lines()), choices=(choice,))


class ProgressLines:
    """A preparation's progress posted as log lines: at most one every ``every_s``, and the
    last one always (the CLI prints each, the progress window logs them)."""

    def __init__(self, post: Callable[[LogLine], None], every_s: float = LINE_EVERY_S) -> None:
        self.post, self.throttle = post, Throttle(every_s)

    def __call__(self, progress: PrepareProgress) -> None:
        if self.throttle.due(force=progress.done == progress.total):
            self.post(LogLine(progress.text[:1].upper() + progress.text[1:]))
