"""The code a person has approved: exact source hashes, each for one hub key. No Qt.

A hub may offer its model as Python source (``--offer-code``) when it cannot export it
as a graph. This machine runs such a source only when its person approved that exact
sha256 for that hub's public key (the app's dialog, or ``computeshare join --trust-code
SHA256``); the approvals are remembered in a small JSON file (``approved-code.json`` in the
per-user data folder, beside the keys), replaced atomically. Another file, or the same file
from another hub, needs its own approval. A file that cannot be read approves nothing.
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path

from ..files import atomic_write

log = logging.getLogger(__name__)

VERSION = 1
FILE_NAME = "approved-code.json"
MAX_APPROVALS = 1000  # the oldest are forgotten past this
_SHA256 = re.compile(r"\A[0-9a-f]{64}\Z")


def is_sha256(text: str) -> bool:
    """True for a sha256 in lower-case hex (what ``--trust-code`` takes, case aside)."""
    return bool(_SHA256.match(text))


class CodeApprovals:
    """The (hub key, sha256) pairs this machine's person approved; ``path`` None keeps
    them in memory only (tests, a session that must not remember)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._memory: list[dict[str, object]] = []

    def approved(self, hub_key: str, sha256: str) -> bool:
        """True when ``sha256`` was approved for ``hub_key``."""
        return any(a.get("hub_key") == hub_key and a.get("sha256") == sha256
                   for a in self._load())

    def approve(self, hub_key: str, sha256: str, model: str = "") -> None:
        """Remember that ``sha256`` may run when ``hub_key`` offers it.

        Raises:
            ValueError: ``sha256`` is not a sha256 in hex, or ``hub_key`` is empty.
            OSError: the file cannot be written (then nothing is remembered).
        """
        sha256 = sha256.lower()
        if not is_sha256(sha256) or not hub_key:
            raise ValueError("an approval needs a hub key and a sha256 of 64 hex digits")
        kept = [a for a in self._load()
                if not (a.get("hub_key") == hub_key and a.get("sha256") == sha256)]
        kept.append({"hub_key": hub_key, "sha256": sha256, "model": model[:200],
                     "approved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        self._save(kept[-MAX_APPROVALS:])
        log.info("approved code %s (%s) for hub key %s...", sha256, model or "a model",
                 hub_key[:8])

    def _load(self) -> list[dict[str, object]]:
        if self.path is None:
            return list(self._memory)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("cannot read the code approvals in %s (%s): none is used",
                        self.path, exc)
            return []
        if not isinstance(data, dict) or data.get("version") != VERSION \
                or not isinstance(data.get("approved"), list):
            return []
        return [a for a in data["approved"] if isinstance(a, dict)]

    def _save(self, approvals: list[dict[str, object]]) -> None:
        if self.path is None:
            self._memory = approvals
            return
        text = json.dumps({"version": VERSION, "approved": approvals}, indent=1)
        atomic_write(self.path, text.encode("utf-8"), mode=0o600)
