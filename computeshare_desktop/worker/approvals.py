"""The code a person has approved: exact source hashes, each for one hub key. No Qt.

A hub may offer its model as Python source (``--offer-code``) when it cannot export it
as a graph. This machine runs such a source only when its person approved that exact
sha256 for that hub's public key (the app's dialog, or ``computeshare join --trust-code
SHA256``); the approvals are remembered in a small JSON file (``approved-code.json`` in the
per-user data folder, beside the keys), replaced atomically. Another file, or the same file
from another hub, needs its own approval. A file that cannot be read approves nothing.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import msgspec

from ..files import atomic_write
from ..stored import read_stored, stored_bytes

log = logging.getLogger(__name__)

VERSION = 1
FILE_NAME = "approved-code.json"
MAX_APPROVALS = 1000  # the oldest are forgotten past this
_SHA256 = re.compile(r"\A[0-9a-f]{64}\Z")


def is_sha256(text: str) -> bool:
    """True for a sha256 in lower-case hex (what ``--trust-code`` takes, case aside)."""
    return bool(_SHA256.match(text))


class Approval(msgspec.Struct):
    """One approved source: its sha256, for one hub key."""

    hub_key: str
    sha256: str
    model: str = ""  # what the hub called it, for the person reading the file
    approved_at: str = ""  # ISO 8601, UTC


class ApprovalsFile(msgspec.Struct):
    """approved-code.json: ``{"version": 1, "approved": [{"hub_key": ..., "sha256": ...,
    "model": ..., "approved_at": ...}]}``, the oldest first."""

    version: int = VERSION
    approved: list[Approval] = []


class CodeApprovals:
    """The (hub key, sha256) pairs this machine's person approved; ``path`` None keeps
    them in memory only (tests, a session that must not remember)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._memory: list[Approval] = []

    def approved(self, hub_key: str, sha256: str) -> bool:
        """True when ``sha256`` was approved for ``hub_key``."""
        return any(a.hub_key == hub_key and a.sha256 == sha256 for a in self._load())

    def approve(self, hub_key: str, sha256: str, model: str = "") -> None:
        """Remember that ``sha256`` may run when ``hub_key`` offers it.

        Raises:
            ValueError: ``sha256`` is not a sha256 in hex, or ``hub_key`` is empty.
            OSError: the file cannot be written (then nothing is remembered).
        """
        sha256 = sha256.lower()
        if not is_sha256(sha256) or not hub_key:
            raise ValueError("an approval needs a hub key and a sha256 of 64 hex digits")
        kept = [a for a in self._load() if not (a.hub_key == hub_key and a.sha256 == sha256)]
        kept.append(Approval(hub_key, sha256, model[:200],
                             time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
        self._save(kept[-MAX_APPROVALS:])
        log.info("approved code %s (%s) for hub key %s...", sha256, model or "a model",
                 hub_key[:8])

    def _load(self) -> list[Approval]:
        if self.path is None:
            return list(self._memory)
        data = read_stored(self.path, ApprovalsFile, ApprovalsFile())
        if data.version != VERSION:
            log.warning("the code approvals in %s are of another version (%d): none is used",
                        self.path, data.version)
            return []
        return data.approved

    def _save(self, approvals: list[Approval]) -> None:
        if self.path is None:
            self._memory = approvals
            return
        atomic_write(self.path, stored_bytes(ApprovalsFile(VERSION, approvals)), mode=0o600)
