"""Durable file writes: the one atomic-write helper every module uses.

A write goes to a temporary file in the same folder, is flushed and fsynced, then renamed
over the target, and the folder itself is fsynced so that the rename survives a power
cut. A crash at any point leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import BinaryIO, Callable

Writer = Callable[[BinaryIO], object]

# Windows refuses to replace a file that another program holds open (a virus scanner or a
# search indexer looking at it, a reader of the old version): such holds last milliseconds,
# so there the rename is tried again for about a second before the write fails. Elsewhere
# a PermissionError is a real one and is raised at once.
REPLACE_TRIES = 20 if sys.platform == "win32" else 1
REPLACE_PAUSE_S = 0.05


def atomic_write(path: str | os.PathLike[str], data: bytes | Writer, *,
                 mode: int | None = None) -> Path:
    """Replace ``path`` with ``data`` (bytes, or a function that writes to a binary file).

    ``mode`` sets the permissions of the new file before any byte is written (e.g. 0o600
    for a secret). Raises OSError (disk full, permission, a replace blocked by another
    program); the target is then untouched and no temporary file is left behind.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        if mode is not None and hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, (bytes, bytearray, memoryview)):
                fh.write(data)
            else:
                data(fh)
            fh.flush()
            os.fsync(fh.fileno())
        _replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sync_folder(target.parent)
    return target


def _replace(source: str, target: Path) -> None:
    for attempt in range(1, REPLACE_TRIES + 1):
        try:
            os.replace(source, target)
            return
        except PermissionError:
            if attempt == REPLACE_TRIES:
                raise
            time.sleep(REPLACE_PAUSE_S)


def sync_folder(folder: Path) -> None:
    """fsync a folder so that a rename in it is durable (a no-op where unsupported)."""
    if sys.platform == "win32":  # folders cannot be opened there; NTFS journals renames
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
