"""``--augment``: the words a user gives, checked, and what a session's workers are told.

``auto`` (the default) means ``DEFAULT_OWN`` for the user's own images (a folder, a
Hugging Face dataset) of at least ``MIN_SIDE`` px, and nothing for the built-in datasets
(their runs and benchmarks stay as they were), data given from Python (its owner chose its
transforms) and tables. ``none`` turns augmentation off. A table refuses any other value.
The worker applies the ops (worker/augment.py); the hub only names them.
"""

from __future__ import annotations

import logging

from ..data import DATASETS, DatasetInfo
from ..data.mapped import PREFIX
from ..errors import ConfigError
from ..protocol.messages import AUGMENTS

log = logging.getLogger(__name__)
AUTO, NONE = "auto", "none"
DEFAULT_OWN = ("crop", "flip")
MIN_SIDE = 32  # smaller images (digits, icons) are not augmented by default


def parse_augment(text: str) -> tuple[str, ...] | None:
    """The ops ``text`` names, in the order workers apply them; None for ``auto``.

    Raises:
        ConfigError: a word that is not an op (the message lists them).
    """
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    if words == [AUTO]:
        return None
    if words in ([], [NONE]):
        return ()
    unknown = [w for w in words if w not in AUGMENTS]
    if unknown:
        raise ConfigError(f"unknown augmentation {unknown[0]!r}: give auto, none or some of "
                          f"{', '.join(AUGMENTS)}, separated by commas")
    return tuple(op for op in AUGMENTS if op in words)


def augment_valid(text: str) -> bool:
    """The schema's check of ``--augment`` (a ConfigError says what is wrong)."""
    parse_augment(text)
    return True


def session_augment(text: str, dataset: str, info: DatasetInfo) -> list[str]:
    """What the Welcome tells workers for ``--augment text`` on this data.

    Raises:
        ConfigError: ops asked for a table.
    """
    ops = parse_augment(text)
    table = info.kind == "table"
    if table and ops:
        raise ConfigError("--augment changes images: a table cannot be augmented "
                          "(leave it out, or give --augment none)")
    if ops is None and not table:
        own = dataset not in DATASETS and not dataset.startswith(PREFIX)
        ops = DEFAULT_OWN if own and min(info.height, info.width) >= MIN_SIDE else ()
    if ops:
        log.info("%s", augment_line(ops))
    return list(ops or ())


def augment_line(ops: tuple[str, ...] | list[str]) -> str:
    """The host's line for the ops workers apply (the CLI and the progress window)."""
    return f"Workers augment each training batch: {','.join(ops)} (augmentation none turns it off)"
