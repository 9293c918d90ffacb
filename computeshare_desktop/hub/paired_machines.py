"""The machines that paired with this hub once, kept across its sessions ("Paired machines").

A worker that paired with the PIN is remembered here by its public key, for the hub's key:
a later session of the same hub (the same long-term key) lets it in without the PIN, until
the host removes it (``forget``: its key must pair with the PIN again) or turns the
feature off (``enabled``). A kicked machine is forgotten at once: it is never let in again
without the PIN. The host's own worker is never listed (it is allowed, not paired).

One small JSON file in the per-user data folder, mode 600, rewritten atomically. It is read
again on every call, so the app's list and a hub running in the same process (or another
one of this user) see the same machines; writes are serialized in the process. A file
written for another hub key (the hub's key file was deleted: a new hub) lists no one.
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

FILE_NAME = "paired-machines.json"
MAX_MACHINES = 256  # the oldest pairing goes first past this many
MAX_REMOVED = 256  # keys the host removed, kept so a resumed session drops them too
_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class PairedMachine:
    """One remembered machine."""

    key: str  # its CURVE public key, Z85
    name: str  # as it paired ("vm · CPU")
    address: str  # the LAN address it paired from ("" when unknown)
    paired_at: float  # seconds since the epoch


class Entry(msgspec.Struct):
    """A machine as the file keeps it, under its key."""

    name: str = ""
    address: str = ""
    paired_at: float = 0.0


class PairedFile(msgspec.Struct):
    """paired-machines.json: ``{"enabled": true, "hub": KEY, "machines": {KEY: {"name": ...,
    "address": ..., "paired_at": ...}}, "removed": [KEY, ...]}``."""

    enabled: bool = True
    hub: str | None = None  # the hub key it was written for (None: not said)
    machines: dict[str, Entry] = {}  # the oldest pairing first
    removed: list[str] = []


class PairedMachines:
    """The paired machines of the hub whose public key is ``hub_key`` (None: whatever hub
    the file was written for; the app's list reads it so)."""

    def __init__(self, path: Path, hub_key: str | None = None) -> None:
        self.path = path
        self.hub_key = hub_key

    # ----------------------------------------------------------------- reading
    def _load(self) -> PairedFile:
        data = read_stored(self.path, PairedFile, PairedFile())
        if self.hub_key is None:
            return data
        if data.hub not in (None, self.hub_key):  # written for another hub: no one
            return PairedFile(enabled=data.enabled, hub=self.hub_key)
        return msgspec.structs.replace(data, hub=self.hub_key)

    @property
    def enabled(self) -> bool:
        """True when paired machines rejoin later sessions without the PIN (the default)."""
        return self._load().enabled

    def machines(self) -> list[PairedMachine]:
        """Every remembered machine, the most recently paired first."""
        found = [PairedMachine(key, entry.name, entry.address, entry.paired_at)
                 for key, entry in self._load().machines.items()]
        return sorted(found, key=lambda m: -m.paired_at)

    def removed(self) -> frozenset[str]:
        """The keys the host removed or kicked (until they pair with the PIN again)."""
        return frozenset(self._load().removed)

    # ----------------------------------------------------------------- writing
    def set_enabled(self, enabled: bool) -> None:
        """Turn the feature on or off (the list is kept either way)."""
        def change(data: PairedFile) -> None:
            data.enabled = bool(enabled)
        self._change(change)

    def remember(self, key: str, name: str, address: str | None) -> None:
        """``key`` paired with the PIN: it rejoins later sessions without it."""
        def change(data: PairedFile) -> None:
            machines = dict(data.machines)
            machines.pop(key, None)
            machines[key] = Entry(name, address or "", time.time())
            while len(machines) > MAX_MACHINES:
                machines.pop(next(iter(machines)))
            data.machines = machines
            data.removed = [k for k in data.removed if k != key]
        self._change(change)

    def forget(self, key: str) -> bool:
        """Remove ``key`` (the host's Remove, or a kick): it needs the PIN again. True if it
        was listed."""
        listed = key in self._load().machines

        def change(data: PairedFile) -> None:
            data.machines = {k: v for k, v in data.machines.items() if k != key}
            data.removed = [k for k in data.removed if k != key][-(MAX_REMOVED - 1):] + [key]
        self._change(change)
        return listed

    def _change(self, change: Callable[[PairedFile], None]) -> None:
        with _LOCK:
            data = self._load()
            change(data)
            atomic_write(self.path, stored_bytes(data), mode=0o600)  # OSError: the caller warns

