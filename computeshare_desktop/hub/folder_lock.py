"""One session per output folder: an OS file lock, held for the session's life.

A session takes the lock on ``.computeshare.lock`` in its folder before it writes anything
there (``metrics.jsonl`` cut back on a resume, checkpoints, the model files) and keeps it
until it has ended: ``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows, both held by
the open file, so a process that dies (kill -9, a crash, a power cut) holds nothing and its
folder can be resumed at once. The file records the holder's PID and, once it listens, its
port, so that a second session is refused naming both (FolderInUseError).

The holder removes the file when it lets go (on POSIX; Windows cannot remove an open
file, and there it stays), so a session that never opened leaves the folder as it was.
A taker that locked a file some holder removed meanwhile sees that the name no longer
points at its file and takes again, so two processes never hold two files of one name.
Only the lock says whether a session runs; what the file says is read only while it is
held. A file system that cannot lock (some network shares) is logged once and the session
runs unlocked, as before.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import msgspec

from ..errors import FolderInUseError
from ..stored import Damaged, decode_stored

log = logging.getLogger(__name__)

LOCK_FILE = ".computeshare.lock"
TAKE_TRIES = 10  # a probe (Recent sessions, a dialog) holds the lock for microseconds
TAKE_PAUSE_S = 0.03
WINDOWS_LOCK_AT = 1 << 20  # the locked byte, past what the file says: readable while held
_SAID: set[tuple[str, bytes]] = set()  # (lock file, its damaged bytes) warned of


@dataclass(frozen=True, slots=True)
class Holder:
    """The running session that holds a folder."""

    pid: int
    port: int | None  # None until it listens

    def text(self) -> str:
        """Who holds it, for people: "process 1234, port 7070"."""
        port = f"port {self.port}" if self.port else "its port not open yet"
        return f"process {self.pid}, {port}"


def _try_lock(fd: int) -> bool:
    """Lock ``fd`` without waiting; False when another open file holds it. OSError when
    the file system cannot lock."""
    if sys.platform == "win32":
        import msvcrt
        os.lseek(fd, WINDOWS_LOCK_AT, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except PermissionError:
            return False
        return True
    import fcntl
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    if sys.platform == "win32":
        import msvcrt
        os.lseek(fd, WINDOWS_LOCK_AT, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    else:
        import fcntl
        fcntl.flock(fd, fcntl.LOCK_UN)


def _open(folder: Path) -> int:
    return os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0),
                   0o644)


def _still_named(fd: int, folder: Path) -> bool:
    """Whether the folder's lock file is still the file ``fd`` has open (not removed by a
    holder that let go meanwhile). Windows never removes it."""
    if sys.platform == "win32":
        return True
    try:
        named = os.stat(folder / LOCK_FILE)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)


class LockFile(msgspec.Struct):
    """What the lock file says, padded with spaces: ``{"pid": 1234, "port": 7070}``."""

    pid: Annotated[int, msgspec.Meta(gt=0)]
    port: int | None = None  # None (or 0) until it listens


def _read(fd: int, folder: Path) -> Holder:
    """Who holds ``fd``'s lock, as its file says; Holder(0, None) when it says nothing
    yet (taken this instant) or is damaged (said once; the file is its holder's and
    goes with it, so no copy is kept)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 4096)
    except OSError:
        return Holder(0, None)
    if not raw.strip():
        return Holder(0, None)  # taken this instant, not written yet
    try:
        found: LockFile = decode_stored(folder / LOCK_FILE, LockFile, raw)
    except Damaged as exc:
        if (str(exc.path), raw) not in _SAID:
            _SAID.add((str(exc.path), raw))
            log.warning("%s: the session holding it cannot be named", exc)
        return Holder(0, None)
    return Holder(found.pid, found.port or None)


def holder(folder: str | os.PathLike[str]) -> Holder | None:
    """The running session that holds ``folder``, or None (no lock file, or nobody holds
    it: its session ended or died). Creates nothing."""
    try:
        fd = os.open(Path(folder) / LOCK_FILE, os.O_RDWR | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        if _try_lock(fd):
            _unlock(fd)
            return None
        return _read(fd, Path(folder))
    except OSError:
        return None
    finally:
        os.close(fd)


class FolderLock:
    """The lock of one session's folder: ``take``, ``record`` its port, ``release``."""

    def __init__(self, folder: Path, fd: int | None, made: bool = False) -> None:
        self.folder = folder
        self._fd = fd  # None: a file system that cannot lock
        self._made = made  # ``take`` made the folder: let go, it is removed if still empty

    @classmethod
    def take(cls, folder: str | os.PathLike[str], port: int | None = None) -> FolderLock:
        """Hold ``folder`` (created if needed) for this process; FolderInUseError naming
        the holder's PID and port when a running session holds it."""
        path = Path(folder)
        made = not path.exists()
        path.mkdir(parents=True, exist_ok=True)
        fd = _open(path)
        try:
            for attempt in range(TAKE_TRIES):
                if _try_lock(fd):
                    if _still_named(fd, path):
                        break
                    _unlock(fd)  # its holder removed it as we locked it: take the new one
                    os.close(fd)
                    fd = _open(path)
                    continue
                if attempt == TAKE_TRIES - 1:
                    raise FolderInUseError(path, _read(fd, path))
                time.sleep(TAKE_PAUSE_S)
        except OSError as exc:
            log.warning("%s cannot be locked (%s): a second session in it is not refused",
                        path, exc)
            os.close(fd)
            return cls(path, None)
        except BaseException:
            os.close(fd)
            raise
        lock = cls(path, fd, made)
        lock.record(port)
        return lock

    @property
    def held(self) -> bool:
        """True until ``release`` (False on a file system that cannot lock)."""
        return self._fd is not None

    def record(self, port: int | None) -> None:
        """Write this process's PID and ``port`` in the lock file."""
        if self._fd is None:
            return
        data = msgspec.json.encode(LockFile(os.getpid(), port))
        try:
            os.lseek(self._fd, 0, os.SEEK_SET)
            os.write(self._fd, data.ljust(64))  # never shorter: no truncate needed
        except OSError as exc:
            log.warning("could not write %s: %s", self.folder / LOCK_FILE, exc)

    def release(self) -> None:
        """Let the folder go (idempotent): another session may take it at once."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                if sys.platform != "win32" and _still_named(fd, self.folder):
                    (self.folder / LOCK_FILE).unlink()  # still held: nobody can take it now
                _unlock(fd)
            except OSError as exc:
                log.warning("could not remove %s: %s", self.folder / LOCK_FILE, exc)
            finally:
                os.close(fd)
            if self._made:
                try:
                    self.folder.rmdir()  # a session that never opened leaves no folder
                except OSError:
                    pass  # it has the session's files: it stays
