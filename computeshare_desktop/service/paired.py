"""Where this user's hub keeps its Paired machines (see hub/paired_machines.py)."""

from __future__ import annotations

from ..hub import blocked
from ..hub.blocked import BlockedMachines
from ..hub.paired_machines import FILE_NAME, PairedMachines
from ..transport.keys import KnownHubs, data_dir, identity_path
from .join import known_hub_key
from .options import JoinTarget


def paired_machines(hub_key: str | None = None) -> PairedMachines:
    """The Paired machines of this user's hub (``hub_key``: its public key; None: as the
    file says), in the per-user data folder beside the keys."""
    return PairedMachines(data_dir() / FILE_NAME, hub_key)


def blocked_machines(hub_key: str) -> BlockedMachines:
    """The machines the host of the hub ``hub_key`` blocked from its sessions, in the
    per-user data folder beside the keys."""
    return BlockedMachines(data_dir() / blocked.FILE_NAME, hub_key)


def forget_hub(target: JoinTarget, name: str) -> bool:
    """The worker called ``name`` stops presenting its key to ``target``'s hub without the
    PIN (that hub refused it: the host removed this machine, or no longer remembers paired
    machines), so the Join dialog asks for the PIN again. True if it was remembered."""
    known = KnownHubs(identity_path("worker", name))
    key = known_hub_key(target, known)
    return key is not None and known.forget(key)
