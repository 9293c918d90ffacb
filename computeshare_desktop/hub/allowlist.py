"""The CURVE public keys allowed to talk to the hub: paired workers, minus removed ones.

Removing a worker (Kick) refuses its key, and the LAN address it paired from (when the
pairing desk gave one), for the rest of this session: it cannot pair again under a new key.
A resumed or a new session does not inherit that; a machine the host also blocked ("Block
this machine", ``blocked``: kept across the hub's sessions) is refused by every session
until the host allows it again. "Allow again" lifts either at once (the machine still pairs
with the PIN).

With ``paired`` (the hub's Paired machines, kept across its sessions), a new session starts
with the machines that paired with this hub before, a key that pairs with the PIN is
remembered there, and a removed one is forgotten there; a key the host removed from that
list is dropped from a resumed session's list too.

Read from the ZAP authenticator's thread and written from the hub's loop: writers replace
an immutable snapshot, so a reader never sees a half-updated set.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from ..files import atomic_write
from ..protocol.codes import RejectCode
from .blocked import BlockedMachines, RemovedMachine, now_removed
from .paired_machines import PairedMachines

log = logging.getLogger(__name__)
_NONE: Mapping[str, RemovedMachine] = MappingProxyType({})


class Allowlist:
    """Public keys (Z85 text) with the name each was paired under."""

    def __init__(self, path: Path | None = None, paired: PairedMachines | None = None,
                 blocked: BlockedMachines | None = None) -> None:
        self.path = path
        self.paired = paired
        self.blocked = blocked
        self._keys: dict[str, str] = {}
        self._addresses: dict[str, str] = {}  # key -> the LAN address it paired from
        self._removed: Mapping[str, RemovedMachine] = _NONE  # key -> why it is refused
        if path is not None and path.exists():  # an earlier run of this session (resumed):
            data = json.loads(path.read_text(encoding="utf-8"))  # its removals are not kept
            if isinstance(data.get("keys"), dict):
                self._keys = {str(k): str(v) for k, v in data["keys"].items()}
                self._addresses = {str(k): str(v)
                                   for k, v in data.get("addresses", {}).items()}
            else:  # the first format: the keys alone
                self._keys = {str(k): str(v) for k, v in data.items()}
        self._seed()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def clear(self) -> None:
        """Revoke every key (a new session): only the hub's paired machines are allowed,
        and only its blocked ones are refused."""
        self._keys, self._addresses, self._removed = {}, {}, _NONE
        self._seed()
        self._save()

    def _seed(self) -> None:
        """The machines this hub paired with in earlier sessions are allowed (those the
        host removed are not); those it blocked are refused."""
        if self.blocked is not None:
            self._removed = MappingProxyType(
                {**{m.key: m for m in self.blocked.machines()}, **self._removed})
        if self.paired is None:
            self._keys = {k: v for k, v in self._keys.items() if k not in self._removed}
            return
        removed = self.paired.removed()
        keys = {k: v for k, v in self._keys.items() if k not in removed}
        for machine in reversed(self.paired.machines()):
            keys[machine.key] = machine.name
            if machine.address:
                self._addresses = {**self._addresses, machine.key: machine.address}
        self._keys = {k: v for k, v in keys.items() if k not in self._removed}

    def banned(self, key: str) -> bool:
        """True when ``key`` was removed from this session, or blocked: it cannot pair."""
        return key in self._removed

    def refusal(self, key: str) -> RejectCode | None:
        """Why ``key`` is refused: BANNED (removed from this session), BLOCKED (the host
        blocked it), None (it is not)."""
        machine = self._removed.get(key)
        if machine is None:
            return None
        return RejectCode.BLOCKED if machine.blocked else RejectCode.BANNED

    def address_refusal(self, address: str) -> RejectCode | None:
        """Why a pairing from ``address`` is refused (a removed key paired from there)."""
        codes = [RejectCode.BLOCKED if m.blocked else RejectCode.BANNED
                 for m in self._removed.values() if m.address and m.address == address]
        return min(codes, key=lambda c: c is not RejectCode.BLOCKED) if codes else None

    def address_banned(self, address: str) -> bool:
        """True when a key that paired from ``address`` was removed: it cannot pair."""
        return self.address_refusal(address) is not None

    def removed(self) -> list[RemovedMachine]:
        """The machines refused now (removed from this session, or blocked), newest first."""
        return sorted(self._removed.values(), key=lambda m: -m.when)

    def ban(self, key: str, block: bool = False) -> RemovedMachine:
        """Revoke ``key`` and refuse it, and the address it paired from, for the rest of
        the session; with ``block``, in every later session of this hub too."""
        machine = now_removed(key, self._keys.get(key, ""), self._addresses.get(key, ""),
                              block)
        self._keys = {k: v for k, v in self._keys.items() if k != key}
        self._removed = MappingProxyType({**self._removed, key: machine})
        self._save()
        if self.paired is not None:  # never let in again without the PIN
            self.paired.forget(key)
        if block and self.blocked is not None:
            self.blocked.block(machine)
        return machine

    def allow_again(self, key: str) -> RemovedMachine | None:
        """Lift a removal or a block: ``key`` (and its address) may pair with the PIN
        again. The machine, or None when it was not refused."""
        machine = self._removed.get(key)
        if machine is None:
            return None
        self._removed = MappingProxyType({k: m for k, m in self._removed.items() if k != key})
        if machine.blocked and self.blocked is not None:
            self.blocked.unblock(key)
        return machine

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
        atomic_write(self.path, json.dumps({"keys": self._keys, "addresses": self._addresses},
                                           indent=1, sort_keys=True).encode())
