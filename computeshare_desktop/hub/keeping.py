"""Keeping what a session's allowlist changed: the session's own list (for a resume), the
hub's Paired machines and its blocked machines (both per user, across sessions).

The allowlist (hub/allowlist.py) touches no file; it queues its changes, and the session
hands them here after each request with its guarded writer (``write(what, fn, *args)``):
a disk error skips that write with one warning and training goes on.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .allowlist import Blocked, Change, Forgotten, KeysChanged, Remembered, Unblocked
from .blocked import BlockedMachines
from .outputs import OutputDir
from .paired_machines import PairedMachines

Writer = Callable[..., Any]  # (what, fn, *args): runs fn(*args), a disk error only warns


def keep(changes: Sequence[Change], out: OutputDir, paired: PairedMachines | None,
         blocked: BlockedMachines | None, write: Writer) -> None:
    """Write each change where it belongs (one that has no store here is dropped)."""
    for change in changes:
        if isinstance(change, KeysChanged):
            write("list of allowed machines", out.save_allowed, dict(change.keys),
                  dict(change.addresses))
        elif isinstance(change, Remembered) and paired is not None:
            write("paired machines", paired.remember, change.key, change.name,
                  change.address)
        elif isinstance(change, Forgotten) and paired is not None:
            write("paired machines", paired.forget, change.key)
        elif isinstance(change, Blocked) and blocked is not None:
            write("blocked machines", blocked.block, change.machine)
        elif isinstance(change, Unblocked) and blocked is not None:
            write("blocked machines", blocked.unblock, change.key)
