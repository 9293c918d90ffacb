"""The CURVE public keys allowed to talk to the hub: paired workers, minus removed ones.

Removing a worker (Kick) refuses its key, and the LAN address it paired from (when the
pairing desk gave one), for the rest of this session: it cannot pair again under a new key.
A resumed or a new session does not inherit that; a machine the host also blocked ("Block
this machine": kept across the hub's sessions, hub/blocked.py) is refused by every session
until the host allows it again. "Allow again" lifts either at once (the machine still pairs
with the PIN).

With ``paired`` (the hub's Paired machines as the session found them), a new session starts
with the machines that paired with this hub before, a key that pairs with the PIN is to be
remembered there, and a removed one forgotten there; a key the host removed from that list
is dropped from a resumed session's list too.

Nothing here touches a file: every change that should outlive the process is queued as a
``Change`` (``take_changes``), which the session writes through its guarded writer (a full
disk warns and training goes on). Read from the ZAP authenticator's thread and written from
the hub's loop: writers replace an immutable snapshot, so a reader never sees a half-updated
set.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Sequence, Union

from ..protocol.codes import RejectCode
from .blocked import RemovedMachine, now_removed
from .paired_machines import PairedMachine

log = logging.getLogger(__name__)
_NONE: Mapping[str, RemovedMachine] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PairedView:
    """The hub's Paired machines as a session found them (hub/paired_machines.py)."""

    machines: tuple[PairedMachine, ...] = ()  # the most recently paired first
    removed: frozenset[str] = frozenset()  # keys the host removed from the list


# What changed, for the session to keep (in the order it happened).
@dataclass(frozen=True, slots=True)
class KeysChanged:
    """The session's allowed keys (and the addresses they paired from) are now these."""

    keys: Mapping[str, str]
    addresses: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Remembered:
    """``key`` proved the PIN: the hub's Paired machines should list it."""

    key: str
    name: str
    address: str | None


@dataclass(frozen=True, slots=True)
class Forgotten:
    """``key`` was removed: the hub's Paired machines should drop it (the PIN again)."""

    key: str


@dataclass(frozen=True, slots=True)
class Blocked:
    """The host blocked ``machine``: the hub's later sessions should refuse it."""

    machine: RemovedMachine


@dataclass(frozen=True, slots=True)
class Unblocked:
    """The host allowed ``key`` again: the hub's later sessions should not refuse it."""

    key: str


Change = Union[KeysChanged, Remembered, Forgotten, Blocked, Unblocked]


class Allowlist:
    """Public keys (Z85 text) with the name each was paired under.

    ``keys``/``addresses``: a resumed session's (what its last run kept); ``paired``: the
    hub's Paired machines (None: the feature is off, or the session does not use it);
    ``blocked``: the machines the host blocked from the hub's sessions."""

    def __init__(self, keys: Mapping[str, str] | None = None,
                 addresses: Mapping[str, str] | None = None, *,
                 paired: PairedView | None = None,
                 blocked: Sequence[RemovedMachine] = ()) -> None:
        self.paired = paired
        self._keys: dict[str, str] = dict(keys or {})
        self._addresses: dict[str, str] = dict(addresses or {})  # key -> where it paired
        self._removed: Mapping[str, RemovedMachine] = MappingProxyType(
            {m.key: m for m in blocked})  # key -> why it is refused
        self._changes: list[Change] = []
        self._seed()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def take_changes(self) -> list[Change]:
        """What changed since the last call, to be kept (oldest first)."""
        changes, self._changes = self._changes, []
        return changes

    def clear(self) -> None:
        """Revoke every key (a new session): only the hub's paired machines are allowed,
        and only its blocked ones are refused."""
        self._keys, self._addresses = {}, {}
        self._removed = MappingProxyType({k: m for k, m in self._removed.items() if m.blocked})
        self._seed()
        self._saved()

    def _seed(self) -> None:
        """The machines this hub paired with in earlier sessions are allowed (those the
        host removed are not); those it blocked are refused."""
        keys = self._keys
        if self.paired is not None:
            keys = {k: v for k, v in keys.items() if k not in self.paired.removed}
            for machine in reversed(self.paired.machines):
                keys[machine.key] = machine.name
                if machine.address:
                    self._addresses = {**self._addresses, machine.key: machine.address}
        self._keys = {k: v for k, v in keys.items() if k not in self._removed}

    # ----------------------------------------------------------------- asking
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

    def name(self, key: str) -> str | None:
        """The name a key was paired under."""
        return self._keys.get(key)

    # ----------------------------------------------------------------- changing
    def ban(self, key: str, block: bool = False) -> RemovedMachine:
        """Revoke ``key`` and refuse it, and the address it paired from, for the rest of
        the session; with ``block``, in every later session of this hub too."""
        machine = now_removed(key, self._keys.get(key, ""), self._addresses.get(key, ""),
                              block)
        self._keys = {k: v for k, v in self._keys.items() if k != key}
        self._removed = MappingProxyType({**self._removed, key: machine})
        self._saved()
        if self.paired is not None:  # never let in again without the PIN
            self._changes.append(Forgotten(key))
        if block:
            self._changes.append(Blocked(machine))
        return machine

    def allow_again(self, key: str) -> RemovedMachine | None:
        """Lift a removal or a block: ``key`` (and its address) may pair with the PIN
        again. The machine, or None when it was not refused."""
        machine = self._removed.get(key)
        if machine is None:
            return None
        self._removed = MappingProxyType({k: m for k, m in self._removed.items() if k != key})
        if machine.blocked:
            self._changes.append(Unblocked(key))
        return machine

    def add(self, key: str, name: str, address: str | None = None) -> None:
        """Allow ``key``, paired from the LAN ``address`` (None: this machine, or unknown)."""
        self._keys = {**self._keys, key: name}
        if address is not None:
            self._addresses = {**self._addresses, key: address}
        self._saved()

    def pair(self, key: str, name: str, address: str | None = None) -> None:
        """``key`` proved the PIN: allow it, and remember it for the hub's later sessions."""
        self.add(key, name, address)
        if self.paired is not None:
            self._changes.append(Remembered(key, name, address))

    def remove(self, key: str) -> bool:
        """Revoke ``key``; True if it was allowed."""
        if key not in self._keys:
            return False
        self._keys = {k: v for k, v in self._keys.items() if k != key}
        self._saved()
        return True

    def _saved(self) -> None:
        """The keys changed: the session keeps the latest set (earlier ones are moot)."""
        self._changes = [c for c in self._changes if not isinstance(c, KeysChanged)]
        self._changes.append(KeysChanged(MappingProxyType(dict(self._keys)),
                                         MappingProxyType(dict(self._addresses))))
