"""What a hub session leaves on disk: session.json, metrics.jsonl, checkpoint.pt, the model.

Writes are atomic (temporary file, then rename) so a crash never leaves half a file, and
the checkpoint loads with ``weights_only=True``: it holds tensors and plain values only.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from ..errors import ConfigError

SESSION_FILE = "session.json"
METRICS_FILE = "metrics.jsonl"
CHECKPOINT_FILE = "checkpoint.pt"
MODEL_FILE = "trained_model.pth"
SNAPSHOT_DIR = "snapshots"


def _atomic(path: Path, write: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class OutputDir:
    """The folder of one session."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def write_session(self, data: dict[str, Any]) -> None:
        """Write session.json."""
        text = json.dumps(data, indent=2, sort_keys=True).encode()
        _atomic(self.path / SESSION_FILE, lambda fh: fh.write(text))

    def read_session(self) -> dict[str, Any]:
        """Read session.json; ConfigError when missing or unreadable."""
        try:
            return json.loads((self.path / SESSION_FILE).read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot resume: no readable {SESSION_FILE} in {self.path}") from exc

    def append_metric(self, record: dict[str, Any]) -> None:
        """Append one JSON line to metrics.jsonl."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / METRICS_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        """Write checkpoint.pt atomically."""
        _atomic(self.path / CHECKPOINT_FILE, lambda fh: torch.save(state, fh))

    def load_checkpoint(self) -> dict[str, Any] | None:
        """The checkpoint, or None when there is none."""
        path = self.path / CHECKPOINT_FILE
        if not path.exists():
            return None
        return torch.load(path, map_location="cpu", weights_only=True)

    def save_model(self, state_dict: dict[str, torch.Tensor]) -> Path:
        """Write trained_model.pth (a plain state_dict) and return its path."""
        path = self.path / MODEL_FILE
        _atomic(path, lambda fh: torch.save(state_dict, fh))
        return path

    def save_snapshot(self, version: int, state_dict: dict[str, torch.Tensor],
                      elapsed_s: float) -> Path:
        """Keep a copy of the weights of ``version`` in snapshots/ (a plain state_dict) and
        note it in metrics.jsonl, so that accuracy over time can be measured afterwards."""
        path = self.path / SNAPSHOT_DIR / f"v{version:07d}.pth"
        _atomic(path, lambda fh: torch.save(state_dict, fh))
        self.append_metric({"type": "snapshot", "version": version, "path": str(path),
                            "elapsed_s": elapsed_s})
        return path
