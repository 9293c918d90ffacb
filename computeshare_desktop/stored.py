"""The files this package writes and reads back, as typed msgspec Structs. No Qt.

Each stored file has a Struct that says what it holds (``gui/settings.SettingsFile``,
``hub/paired_machines.PairedFile``...). ``read_stored`` decodes a file into its Struct:
a missing file gives the reader's default, and so does a damaged one (not JSON, a value of
the wrong type), after a warning that says what was wrong (msgspec names the field:
"Expected `bool`, got `str` - at `$.enabled`") and a copy of the file kept beside it
(``NAME.damaged-YYYYmmdd-HHMMSS``), so that the next write, which replaces the file, loses
nothing the user may want back. A writer writes ``stored_bytes`` of its Struct with
``files.atomic_write``.

A file read often (the paired machines, a recent session's summary) warns once per damage
in a process and keeps one copy of each damaged content.

A JSON-lines file (metrics.jsonl) reads line by line (``read_lines``): a damaged line is
skipped, said with its line number; a reader that rewrites the file without it keeps the
file as it was beside itself first (``keep_damaged``). A cache's manifest reads through
``read_manifest``: another layout's is prepared again, quietly. A reader that refuses a
damaged file rather than fall back, or that reads a file another program owns (a saved
dataset's state.json), decodes it with ``decode_stored``, which keeps no copy.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from .files import atomic_write

log = logging.getLogger(__name__)

T = TypeVar("T")
DAMAGED = ".damaged-"  # NAME.damaged-YYYYmmdd-HHMMSS: a copy of a file that did not read
Older = Sequence[tuple[Any, Callable[[Any], T]]]  # an older format and its upgrade
_REPORTED: set[tuple[str, str]] = set()  # (path, digest of its damaged bytes) warned of
_LOCK = threading.Lock()


class Damaged(ValueError):
    """A stored file that does not hold what its reader expects; the message says what,
    and ``kept`` where its copy is (None when none could be written)."""

    def __init__(self, path: Path, reason: str, kept: Path | None) -> None:
        super().__init__(f"{path} is damaged ({reason})")
        self.path, self.reason, self.kept = path, reason, kept


def load_stored(path: str | os.PathLike[str], kind: Any, *, older: Older[Any] = ()) -> Any:
    """``path`` decoded as ``kind`` (a Struct, or any type msgspec decodes).

    ``older``: formats the file had before, each with a function that turns it into
    ``kind``'s value, tried in order when the file is not in the current one.

    Raises:
        FileNotFoundError: there is no file.
        OSError: it cannot be read.
        Damaged: it is not what ``kind`` (or an older format) holds; warned of, copy kept.
    """
    target = Path(path)
    raw = target.read_bytes()
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.DecodeError as exc:
        error = exc
    for old, upgrade in older:
        try:
            return upgrade(msgspec.json.decode(raw, type=old))
        except msgspec.DecodeError:
            continue
    raise _damaged(target, raw, str(error))


def read_stored(path: str | os.PathLike[str], kind: type[T], default: T, *,
                older: Older[T] = ()) -> T:
    """``path`` decoded as ``kind``; ``default`` when the file is missing, cannot be read
    or is damaged (see ``load_stored``; only a missing file goes unsaid)."""
    try:
        value: T = load_stored(path, kind, older=older)
    except FileNotFoundError:
        return default
    except Damaged:
        return default
    except OSError as exc:
        log.warning("cannot read %s (%s): using the defaults", path, exc)
        return default
    return value


def stored_bytes(value: Any) -> bytes:
    """``value`` (a Struct, or plain JSON values) as the indented JSON a stored file holds;
    its writer writes them with ``files.atomic_write``."""
    return msgspec.json.format(msgspec.json.encode(value), indent=1)


def _damaged(path: Path, raw: bytes, reason: str) -> Damaged:
    digest = hashlib.sha256(raw).hexdigest()
    with _LOCK:
        kept = _keep(path, raw)
        first = (str(path), digest) not in _REPORTED
        _REPORTED.add((str(path), digest))
    if first:
        log.warning("%s is damaged (%s): %s; using the defaults", path, reason,
                    f"a copy is kept as {kept.name}" if kept else "no copy could be kept")
    return Damaged(path, reason, kept)


def _keep(path: Path, raw: bytes) -> Path | None:
    """A copy of ``raw`` beside ``path`` (the one made before, if any holds the same
    bytes), with the file's permissions; None when it cannot be written."""
    for earlier in sorted(path.parent.glob(f"{path.name}{DAMAGED}*")):
        try:
            if earlier.read_bytes() == raw:
                return earlier
        except OSError:
            continue
    copy = path.with_name(f"{path.name}{DAMAGED}{time.strftime('%Y%m%d-%H%M%S')}")
    n = 1
    while copy.exists():
        n += 1
        copy = copy.with_name(f"{path.name}{DAMAGED}{time.strftime('%Y%m%d-%H%M%S')}-{n}")
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        return atomic_write(copy, raw, mode=mode)
    except OSError:
        return None


# ------------------------------------------------------------------ JSON lines
def read_lines(path: str | os.PathLike[str], kind: Any, *,
               check: Any = None) -> Iterator[tuple[bytes, Any]]:
    """Each line of the JSON-lines file ``path`` (metrics.jsonl), in order, as its bytes
    and its value decoded as ``kind``; a blank line is passed over.

    A damaged line (torn by a crash, not JSON, not a ``kind``, or not a ``check`` when
    one is given: a Struct of the few fields the reader relies on, which ignores the
    others) comes with the value None, after a warning naming its line number and what
    was wrong (once per damage in a process): it never ends the reading. A line Python's
    json wrote with NaN or Infinity, which JSON has not, still reads (msgspec refuses
    them; json reads them back).

    Raises:
        OSError: the file cannot be read (a missing one has no lines).
    """
    target = Path(path)
    try:
        fh = open(target, "rb")
    except FileNotFoundError:
        return
    with fh:
        for number, raw in enumerate(fh, start=1):
            if raw.strip():
                yield raw, _line(target, number, raw, kind, check)


def keep_damaged(path: str | os.PathLike[str]) -> Path | None:
    """A copy of ``path`` as it is now, kept beside it as ``NAME.damaged-...`` (the one
    kept before, if it holds the same bytes), before a reader rewrites it without what
    it could not read; None when it cannot be read or the copy cannot be written."""
    target = Path(path)
    try:
        raw = target.read_bytes()
    except OSError:
        return None
    with _LOCK:
        return _keep(target, raw)


def _line(path: Path, number: int, raw: bytes, kind: Any, check: Any) -> Any:
    """Line ``number`` of ``path`` as ``kind``, or None after saying why it is damaged."""
    try:
        value = _json_value(raw.strip())
        if check is not None:
            msgspec.convert(value, check)
        return msgspec.convert(value, kind)
    except msgspec.DecodeError as exc:
        where = (f"{path}:{number}", hashlib.sha256(raw).hexdigest())
        with _LOCK:
            first = where not in _REPORTED
            _REPORTED.add(where)
        if first:
            log.warning("%s line %d is damaged (%s): skipped", path, number, exc)
        return None


def _json_value(raw: bytes) -> Any:
    """One line's JSON value: msgspec's, or json's for NaN and Infinity."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        error = exc
    try:
        return json.loads(raw)
    except ValueError:
        raise error from None


# ------------------------------------------------------------------ caches, foreign files
class Manifest(msgspec.Struct, kw_only=True):
    """A cache's manifest (its meta.json, written last): ``format`` is the layout of the
    cache it describes. Each cache's Struct adds its own fields."""

    format: int


class _Layout(msgspec.Struct):
    format: int | None = None  # None: a manifest that does not say


M = TypeVar("M", bound=Manifest)


def read_manifest(path: str | os.PathLike[str], kind: type[M], layout: int) -> M | None:
    """The manifest ``path`` decoded as ``kind`` when it describes a cache of ``layout``;
    None, and the cache is prepared again, when it is missing, of another layout (not
    said: nothing is wrong) or damaged (said and kept beside itself, as ``read_stored``
    does: the next preparation replaces it)."""
    def other(found: _Layout) -> None:
        if found.format == layout:  # this layout, damaged: said with ``kind``'s error
            raise msgspec.ValidationError(f"a damaged manifest of layout {layout}")
        return None

    manifest = read_stored(path, kind, None, older=[(_Layout, other)])
    return manifest if manifest is not None and manifest.format == layout else None


def decode_stored(path: str | os.PathLike[str], kind: Any, raw: bytes | None = None) -> Any:
    """``path`` decoded as ``kind`` (from ``raw``, its bytes, when the caller has read
    them), for a reader that refuses a damaged file rather than fall back and replace it,
    or that reads a file another program owns: nothing is logged and no copy is kept
    (the caller says what was wrong).

    Raises:
        FileNotFoundError: there is no file (``raw`` None).
        OSError: it cannot be read (``raw`` None).
        Damaged: it is not what ``kind`` holds (its ``kept`` None).
    """
    target = Path(path)
    data = target.read_bytes() if raw is None else raw
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.DecodeError as exc:
        raise Damaged(target, str(exc), None) from None
