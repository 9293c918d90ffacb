"""The CURVE public keys allowed to talk to the hub: paired workers, minus kicked (banned) ones.

A ban covers the key and the LAN address it paired from (when the pairing desk gave one):
a kicked machine cannot pair again under a new key.

With ``paired`` (the hub's Paired machines, kept across its sessions), a new session starts
with the machines that paired with this hub before, a key that pairs with the PIN is
remembered there, and a kicked one is forgotten there; a key the host removed from that
list is dropped from a resumed session's list too.

Read from the ZAP authenticator's thread and written from the hub's loop: writers replace
an immutable snapshot, so a reader never sees a half-updated set.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..files import atomic_write
from .paired_machines import PairedMachines

log = logging.getLogger(__name__)


class Allowlist:
    """Public keys (Z85 text) with the name each was paired under."""

    def __init__(self, path: Path | None = None, paired: PairedMachines | None = None) -> None:
        self.path = path
        self.paired = paired
        self._keys: dict[str, str] = {}
        self._banned: frozenset[str] = frozenset()
        self._addresses: dict[str, str] = {}  # key -> the LAN address it paired from
        self._banned_addresses: frozenset[str] = frozenset()
        if path is not None and path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data.get("keys"), dict):
                self._keys = {str(k): str(v) for k, v in data["keys"].items()}
                self._banned = frozenset(str(k) for k in data.get("banned", []))
                self._addresses = {str(k): str(v)
                                   for k, v in data.get("addresses", {}).items()}
                self._banned_addresses = frozenset(
                    str(a) for a in data.get("banned_addresses", []))
            else:  # the first format: the keys alone
                self._keys = {str(k): str(v) for k, v in data.items()}
        self._seed()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def clear(self) -> None:
        """Revoke every key and forget every ban (a new session)."""
        self._keys, self._banned = {}, frozenset()
        self._addresses, self._banned_addresses = {}, frozenset()
        self._seed()
        self._save()

    def _seed(self) -> None:
        """The machines this hub paired with in earlier sessions are allowed (those the
        host removed are not, and a banned key stays banned)."""
        if self.paired is None:
            return
        removed = self.paired.removed()
        keys = {k: v for k, v in self._keys.items() if k not in removed}
        for machine in reversed(self.paired.machines()):
            if machine.key not in self._banned:
                keys[machine.key] = machine.name
                if machine.address:
                    self._addresses = {**self._addresses, machine.key: machine.address}
        self._keys = keys

    def banned(self, key: str) -> bool:
        """True when ``key`` was kicked: it cannot pair again in this session."""
        return key in self._banned

    def address_banned(self, address: str) -> bool:
        """True when a key that paired from ``address`` was kicked: it cannot pair again."""
        return address in self._banned_addresses

    def ban(self, key: str) -> None:
        """Revoke ``key`` and refuse it, and the address it paired from, for the rest of
        the session."""
        self._keys = {k: v for k, v in self._keys.items() if k != key}
        self._banned = self._banned | {key}
        address = self._addresses.get(key)
        if address is not None:
            self._banned_addresses = self._banned_addresses | {address}
        self._save()
        if self.paired is not None:  # never let in again without the PIN
            self.paired.forget(key)

    def name(self, key: str) -> str | None:
        """The name a key was paired under."""
        return self._keys.get(key)

    def add(self, key: str, name: str, address: str | None = None) -> None:
        """Allow ``key``, paired from the LAN ``address`` (None: this machine, or unknown)."""
        self._keys = {**self._keys, key: name}
        if address is not None:
            self._addresses = {**self._addresses, key: address}
        self._save()

    def pair(self, key: str, name: str, address: str | None = None) -> None:
        """``key`` proved the PIN: allow it, and remember it for the hub's later sessions."""
        self.add(key, name, address)
        if self.paired is not None:
            self.paired.remember(key, name, address)

    def remove(self, key: str) -> bool:
        """Revoke ``key``; True if it was allowed."""
        if key not in self._keys:
            return False
        self._keys = {k: v for k, v in self._keys.items() if k != key}
        self._save()
        return True

    def _save(self) -> None:
        if self.path is None:
            return
        atomic_write(self.path, json.dumps({
            "keys": self._keys, "banned": sorted(self._banned), "addresses": self._addresses,
            "banned_addresses": sorted(self._banned_addresses)}, indent=1,
            sort_keys=True).encode())
