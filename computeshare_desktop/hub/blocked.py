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

import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import atomic_write

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


class BlockedMachines:
    """The blocked machines of the hub whose public key is ``hub_key``."""

    def __init__(self, path: Path, hub_key: str) -> None:
        self.path = path
        self.hub_key = hub_key

    def machines(self) -> list[RemovedMachine]:
        """Every blocked machine, the most recently blocked first."""
        found = [_machine(str(key), entry) for key, entry in self._load().items()
                 if isinstance(entry, dict)]
        return sorted(found, key=lambda m: -m.when)

    def block(self, machine: RemovedMachine) -> None:
        """Refuse ``machine`` (its key and address) in every later session of this hub."""
        def change(blocked: dict[str, Any]) -> None:
            blocked.pop(machine.key, None)
            blocked[machine.key] = {"name": machine.name, "address": machine.address,
                                    "when": machine.when}
            while len(blocked) > MAX_BLOCKED:
                blocked.pop(next(iter(blocked)))
        self._change(change)

    def unblock(self, key: str) -> None:
        """Allow ``key`` again (it still pairs with the PIN)."""
        self._change(lambda blocked: blocked.pop(key, None))

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("hub") != self.hub_key:
            return {}
        blocked = data.get("blocked")
        return dict(blocked) if isinstance(blocked, dict) else {}

    def _change(self, change: Any) -> None:
        with _LOCK:
            blocked = self._load()
            change(blocked)
            text = json.dumps({"hub": self.hub_key, "blocked": blocked}, indent=1,
                              sort_keys=True)
            atomic_write(self.path, text.encode(), mode=0o600)  # OSError: the caller warns


def _machine(key: str, entry: dict[str, Any]) -> RemovedMachine:
    try:
        when = float(entry.get("when") or 0.0)
    except (TypeError, ValueError):
        when = 0.0
    return RemovedMachine(key, str(entry.get("name") or ""), str(entry.get("address") or ""),
                          True, when)


def now_removed(key: str, name: str, address: str, blocked: bool) -> RemovedMachine:
    """A machine removed now."""
    return RemovedMachine(key, name, address, blocked, time.time())
