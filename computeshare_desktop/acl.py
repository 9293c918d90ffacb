"""Files only this user can open, on Windows: an ACL with one entry, set with ``icacls``.

POSIX systems say who may read a file with its mode (``0o600``, ``0o700``); Windows ignores
modes and asks the file's access control list instead. A new file there inherits the ACL
of its folder: in ``%LOCALAPPDATA%`` that grants this user, SYSTEM and the Administrators.
``restrict_to_user`` removes the inherited entries and grants this user alone, which is
what ``chmod 600`` (a file) or ``chmod 700`` (a folder) means on POSIX. Elsewhere it does
nothing. The command is built by a pure function so that it is tested on every system;
running it is tested on Windows only.
"""

from __future__ import annotations

import getpass
import logging
import os
import subprocess
from pathlib import Path, PureWindowsPath
from typing import Mapping

log = logging.getLogger(__name__)

# Tests on other systems turn this on, with ``subprocess.run`` replaced, to check the calls.
USE_ACL = os.name == "nt"
TIMEOUT_S = 30.0


def windows_account(env: Mapping[str, str]) -> str:
    """The current account as icacls names it: ``DOMAIN\\user`` (the domain of a local
    account is the machine's name), or the bare user name when no domain is known."""
    user = env.get("USERNAME") or getpass.getuser()
    domain = env.get("USERDOMAIN")
    return f"{domain}\\{user}" if domain else user


def icacls_command(path: str | os.PathLike[str], account: str, *, folder: bool,
                   system_root: str | None = None) -> list[str]:
    """The ``icacls`` call that leaves ``account`` the only one with access to ``path``.

    ``/inheritance:r`` drops the entries inherited from the folders above; ``/grant:r``
    replaces any entry of the account with full control. A folder's grant is inherited by
    the files and folders created in it later (``(OI)(CI)``), so a file is private from
    the moment it exists. icacls is taken from ``system_root`` (``%SystemRoot%``) so that
    a program named icacls earlier on PATH is not run.
    """
    rights = "(OI)(CI)F" if folder else "F"
    exe = str(PureWindowsPath(system_root, "System32", "icacls.exe")) if system_root else \
        "icacls.exe"
    return [exe, os.fspath(path), "/inheritance:r", "/grant:r", f"{account}:{rights}", "/q"]


def restrict_to_user(path: Path, *, folder: bool = False) -> bool:
    """Let only the current user open ``path`` (Windows; elsewhere a no-op that returns
    True). Never raises: False when icacls failed, which is logged as a warning (the file
    then keeps the ACL its folder gave it)."""
    if not USE_ACL:
        return True
    try:
        command = icacls_command(path, windows_account(os.environ), folder=folder,
                                 system_root=os.environ.get("SystemRoot"))
        # CREATE_NO_WINDOW: the desktop app has no console, and a console program
        # started from it would flash one.
        proc = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S,
                              creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))
    except (OSError, ImportError, subprocess.SubprocessError) as exc:  # ImportError: no user name
        log.warning("could not make %s private to this user (%s): it keeps its folder's "
                    "access rights", path, exc)
        return False
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout or "").strip().splitlines()
        log.warning("could not make %s private to this user (icacls exit %d: %s): it keeps "
                    "its folder's access rights", path, proc.returncode,
                    said[0] if said else "no message")
        return False
    return True
