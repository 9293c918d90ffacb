"""Long-term CURVE identities, one per role and name, in files only this user can read.

POSIX: a key file is mode 600 in a folder of mode 700, and a key file that other users can
read is refused. Windows: modes mean nothing there; the folder and each key file get an
ACL that grants this user alone (``acl.restrict_to_user``), and nothing is checked on read.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import msgspec
import platformdirs
import zmq

from ..acl import restrict_to_user
from ..defaults import HOME_ENV
from ..errors import ConfigError
from ..files import atomic_write
from ..stored import read_stored, stored_bytes

KnownFile = dict[str, list[str]]  # a worker's known hubs: {HUB_KEY: [ADDRESS, ...]}


@dataclass(frozen=True, slots=True)
class Identity:
    """A CURVE key pair, Z85 text."""

    public: str
    secret: str

    @classmethod
    def generate(cls) -> "Identity":
        """A fresh key pair from libzmq."""
        public, secret = zmq.curve_keypair()
        return cls(public.decode("ascii"), secret.decode("ascii"))


def data_dir() -> Path:
    """Where ComputeShare keeps this user's identities."""
    override = os.environ.get(HOME_ENV)
    return Path(override) if override else Path(platformdirs.user_data_dir("computeshare",
                                                                          appauthor=False))


# POSIX modes say who can read a key file. Windows reports 0o666 for every file: there the
# protection is the ACL set when the key is made (see the README's threat model), and the
# mode check would refuse every key on the second launch.
CHECK_MODE = os.name == "posix"


def identity_path(role: str, name: str = "default") -> Path:
    """The key file of a role ("hub" or "worker") and a name (one key per worker name)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64] or "default"
    return data_dir() / "identity" / f"{role}-{safe}.key"


def load_or_create(path: Path) -> Identity:
    """Read a key file, or create one that only this user can read."""
    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
        if CHECK_MODE and mode & 0o077:
            raise ConfigError(f"{path} is readable by other users (mode {mode:o}): "
                              f"chmod 600 it or delete it to make a new key")
        try:  # never replaced on its own: the user chooses to make a new key
            identity = msgspec.json.decode(path.read_bytes(), type=Identity)
        except (OSError, msgspec.DecodeError) as exc:
            raise ConfigError(f"cannot read key file {path}: {exc}") from None
        if zmq.curve_public(identity.secret.encode()).decode() != identity.public:
            raise ConfigError(f"key file {path} is corrupt: delete it to make a new key")
        return identity
    identity = Identity.generate()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    # Windows: the folder first, so the temporary file that receives the secret inherits
    # the private ACL from its first byte; then the file itself, for good measure.
    restrict_to_user(path.parent, folder=True)
    atomic_write(path, stored_bytes(identity), mode=0o600)
    restrict_to_user(path)
    return identity


class KnownHubs:
    """The hubs a worker has paired with, per hub key: the addresses it reached each at.

    A worker that restarts finds the hub's key here and rejoins without the PIN (the hub
    still allows its key while the session lasts, and in its later sessions while this
    machine is on its Paired machines list). Kept beside the worker's key file.
    """

    def __init__(self, key_file: Path) -> None:
        self.path = key_file.with_name(key_file.stem + "-hubs.json")

    def _load(self) -> KnownFile:
        return read_stored(self.path, KnownFile, {})

    def key_for(self, address: str) -> str | None:
        """The key of the hub last reached at ``address`` ("host:port"), if any."""
        for key, addresses in self._load().items():
            if address in addresses:
                return key
        return None

    def key_with_fingerprint(self, fingerprint: str, digest: Callable[[str], str]) -> str | None:
        """The remembered key whose fingerprint (``digest(key)``) is ``fingerprint``."""
        return next((k for k in self._load() if digest(k) == fingerprint), None)

    def forget(self, hub_key: str) -> bool:
        """Drop ``hub_key`` (its hub no longer lets this worker in without the PIN); True
        if it was remembered."""
        known = self._load()
        if known.pop(hub_key, None) is None:
            return False
        self._save(known)
        return True

    def remember(self, hub_key: str, address: str) -> None:
        """Note that ``hub_key`` answered at ``address`` (an address moves to its newest key)."""
        known = {k: [a for a in v if a != address] for k, v in self._load().items()}
        known[hub_key] = [address, *known.get(hub_key, [])][:8]
        self._save({k: v for k, v in known.items() if v})

    def _save(self, known: dict[str, list[str]]) -> None:
        try:
            atomic_write(self.path, stored_bytes(known), mode=0o600)
        except OSError:  # a convenience: the PIN still works
            pass
