"""The machines a host blocked ("Block this machine"), kept across the hub's sessions.

Removing a worker (Kick) keeps it out of the session it was removed from, and no longer:
the host's next session, or the same one resumed, lets it pair with the PIN again. A host
who wants it out for good ticks "Block this machine": its key and the LAN address it
paired from are listed here, for the hub's key, and every session of this hub refuses
them (BLOCKED) until the host chooses "Allow again".

One small JSON file in the per-user data folder, mode 600, rewritten atomically; a file
written for another hub key lists no one. A write that fails (a full disk) raises OSError:
the session warns once, and the block holds for the running session only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ..files import atomic_write
from ..stored import read_stored, stored_bytes

log = logging.getLogger(__name__)

FILE_NAME = "blocked-machines.json"
MAX_BLOCKED = 256  # the oldest block goes first past this many
_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class RemovedMachine:
    """A machine the host removed from a session, or blocked from all of them."""

    key: str  # its CURVE public key, Z85
    name: str  # as it paired ("vm · CPU")
    address: str  # the LAN address it paired from ("" when unknown, or this machine)
    blocked: bool  # True: refused by every session of this hub; False: by this one only
    when: float  # seconds since the epoch


class Entry(msgspec.Struct):
    """A blocked machine as the file keeps it, under its key."""

    name: str = ""
    address: str = ""
    when: float = 0.0


class BlockedFile(msgspec.Struct):
    """blocked-machines.json: ``{"hub": KEY, "blocked": {KEY: {"name": ..., "address": ...,
    "when": ...}}}``, the oldest block first."""

    hub: str = ""
    blocked: dict[str, Entry] = {}


class BlockedMachines:
    """The blocked machines of the hub whose public key is ``hub_key``."""

    def __init__(self, path: Path, hub_key: str) -> None:
        self.path = path
        self.hub_key = hub_key

    def machines(self) -> list[RemovedMachine]:
        """Every blocked machine, the most recently blocked first."""
        found = [RemovedMachine(key, entry.name, entry.address, True, entry.when)
                 for key, entry in self._load().items()]
        return sorted(found, key=lambda m: -m.when)

    def block(self, machine: RemovedMachine) -> None:
        """Refuse ``machine`` (its key and address) in every later session of this hub."""
        def change(blocked: dict[str, Entry]) -> None:
            blocked.pop(machine.key, None)
            blocked[machine.key] = Entry(machine.name, machine.address, machine.when)
            while len(blocked) > MAX_BLOCKED:
                blocked.pop(next(iter(blocked)))
        self._change(change)

    def unblock(self, key: str) -> None:
        """Allow ``key`` again (it still pairs with the PIN)."""
        self._change(lambda blocked: blocked.pop(key, None))

    def _load(self) -> dict[str, Entry]:
        data = read_stored(self.path, BlockedFile, BlockedFile())
        return dict(data.blocked) if data.hub == self.hub_key else {}

    def _change(self, change: Callable[[dict[str, Entry]], object]) -> None:
        with _LOCK:
            blocked = self._load()
            change(blocked)
            atomic_write(self.path, stored_bytes(BlockedFile(self.hub_key, blocked)),
                         mode=0o600)  # OSError: the caller warns


def now_removed(key: str, name: str, address: str, blocked: bool) -> RemovedMachine:
    """A machine removed now."""
    return RemovedMachine(key, name, address, blocked, time.time())
