"""What a hub session leaves on disk: session.json, metrics.jsonl, checkpoint.pt, the model
(trained_model.pth, its eval program trained_model.pt2 and classes.json).

Writes are atomic and durable (``files.atomic_write``) so a crash never leaves half a
file, and the checkpoint loads with ``weights_only=True``: it holds tensors and plain
values only. Every write raises OSError on a disk error; the session decides what to do.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Iterator, Sequence

import msgspec
import torch

from ..errors import ConfigError
from ..files import atomic_write
from ..stored import Damaged, keep_damaged, load_stored, read_lines, read_stored
from .folder_lock import holder

log = logging.getLogger(__name__)

SESSION_FILE = "session.json"
METRICS_FILE = "metrics.jsonl"
CHECKPOINT_FILE = "checkpoint.pt"
MODEL_FILE = "trained_model.pth"
PROGRAM_FILE = "trained_model.pt2"  # eval mode, normalization inside (hub/exports.py)
CLASSES_FILE = "classes.json"  # the class names in output order, a JSON list
FEATURES_FILE = "features.json"  # a table's feature columns in input order, a JSON list
SNAPSHOT_DIR = "snapshots"
ALLOWED_FILE = "allowed_workers.json"  # the keys this session let in (a resume keeps them)


class MetricFields(msgspec.Struct, forbid_unknown_fields=False):
    """What the readers of a metrics.jsonl record rely on; a record holds many more
    fields (a round's, an evaluation's...), which pass through as they are."""

    type: str = ""  # "round", "eval", "snapshot", "mode", "staleness"
    version: int = 0  # the model version it was recorded at
    final: bool = False  # an evaluation of the last round


def metric_records(folder: Path) -> Iterator[dict[str, Any]]:
    """The records of ``folder``'s metrics.jsonl, in order, each a JSON object whose
    ``MetricFields`` are of their types: a damaged line (torn by a crash, not an object,
    a version that is not a number) is skipped, said with its line number (see
    ``stored.read_lines``); no file, or one that cannot be read: none."""
    try:
        for _, record in read_lines(folder / METRICS_FILE, dict[str, Any],
                                    check=MetricFields):
            if record is not None:
                yield record
    except OSError:
        return


class SessionFile(msgspec.Struct):
    """session.json: the session's configuration (``HubConfig.to_json``, checked by
    ``HubConfig.from_json``), who hosted it and how (``host``: HostService.hosted's name,
    port...; {} in one written before they were kept, and read value by value by
    ``service.options.hosted_options``)."""

    config: dict[str, Any]
    session_id: str = ""
    hub_key: str = ""
    fingerprint: str = ""
    protocol: int = 0
    computeshare: str = ""
    parameters: int = 0
    compute: str = ""
    host: dict[str, Any] = {}


class AllowedFile(msgspec.Struct):
    """allowed_workers.json: ``{"keys": {KEY: NAME}, "addresses": {KEY: ADDRESS}}`` (the
    first format held the keys alone: ``{KEY: NAME}``)."""

    keys: dict[str, str]
    addresses: dict[str, str] = {}


class OutputDir:
    """The folder of one session."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def write_session(self, data: dict[str, Any]) -> None:
        """Write session.json."""
        atomic_write(self.path / SESSION_FILE, json.dumps(data, indent=2, sort_keys=True).encode())

    def holds_session(self) -> bool:
        """True when the folder already belongs to a session (its files are there)."""
        return any((self.path / name).exists() for name in (SESSION_FILE, METRICS_FILE))

    def has_checkpoint(self) -> bool:
        """True when the folder holds a checkpoint to resume from."""
        return (self.path / CHECKPOINT_FILE).exists()

    def summary(self) -> dict[str, Any] | None:
        """What a list of recent sessions shows, read cheaply (no checkpoint load): the
        configuration, the last version in the metrics, whether it finished and whether it
        can be resumed, whether a session runs in it now (``running``: its folder_lock.Holder,
        or None; a running one is not resumable), and how it was hosted (``host``: its name,
        port... {} in a session.json written before they were kept). None when the folder
        holds no readable session (a damaged session.json is said and kept aside)."""
        saved = read_stored(self.path / SESSION_FILE, SessionFile, None)
        if saved is None:
            return None
        version, finished = 0, False
        for record in metric_records(self.path):
            fields = msgspec.convert(record, MetricFields)
            version, finished = max(version, fields.version), finished or fields.final
        running = holder(self.path)
        return {"config": saved.config, "version": version, "finished": finished,
                "running": running,
                "resumable": self.has_checkpoint() and not finished and running is None,
                "model_saved": (self.path / MODEL_FILE).exists(), "host": saved.host}

    def read_session(self) -> dict[str, Any]:
        """Read session.json; ConfigError when missing or unreadable (saying what was
        wrong with a damaged one, which is kept aside)."""
        try:
            saved = load_stored(self.path / SESSION_FILE, SessionFile)
        except Damaged as exc:
            raise ConfigError(f"cannot resume: {SESSION_FILE} in {self.path} is damaged "
                              f"({exc.reason})") from exc
        except OSError as exc:
            raise ConfigError(f"cannot resume: no readable {SESSION_FILE} in {self.path}") from exc
        return msgspec.structs.asdict(saved)

    def save_allowed(self, keys: dict[str, str], addresses: dict[str, str]) -> None:
        """Keep the keys this session allowed (and where each paired from) for a resume."""
        atomic_write(self.path / ALLOWED_FILE, json.dumps(
            {"keys": keys, "addresses": addresses}, indent=1, sort_keys=True).encode())

    def read_allowed(self) -> tuple[dict[str, str], dict[str, str]]:
        """The keys a resumed session allowed before, and their addresses; none when the
        file is missing or damaged (its workers then pair with the PIN again)."""
        allowed = read_stored(self.path / ALLOWED_FILE, AllowedFile, AllowedFile({}),
                              older=[(dict[str, str], AllowedFile)])  # keys alone
        return allowed.keys, allowed.addresses

    def append_metric(self, record: dict[str, Any]) -> None:
        """Append one JSON line to metrics.jsonl."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / METRICS_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")

    def cut_metrics(self, version: int) -> int:
        """Drop the records after ``version`` (a resume replays them), and the damaged
        lines (each said; the file as it was is kept beside it first); how many went.
        OSError when the file cannot be read or written."""
        path = self.path / METRICS_FILE
        kept, dropped, damaged = [], 0, False
        for raw, record in read_lines(path, MetricFields):
            damaged = damaged or record is None
            if record is None or record.version > version:
                dropped += 1
            else:
                kept.append(raw.rstrip(b"\r\n") + b"\n")
        if damaged:
            copy = keep_damaged(path)
            log.warning("%s: its damaged lines are dropped; %s", path,
                        f"the file as it was is kept as {copy.name}" if copy
                        else "no copy of it could be kept")
        if dropped:
            atomic_write(path, b"".join(kept))
        return dropped

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        """Write checkpoint.pt atomically."""
        atomic_write(self.path / CHECKPOINT_FILE, lambda fh: torch.save(state, fh))

    def load_checkpoint(self) -> dict[str, Any] | None:
        """The checkpoint, or None when there is none."""
        path = self.path / CHECKPOINT_FILE
        if not path.exists():
            return None
        return torch.load(path, map_location="cpu", weights_only=True)

    def save_model(self, state_dict: dict[str, torch.Tensor]) -> Path:
        """Write trained_model.pth (a plain state_dict) and return its path."""
        path = self.path / MODEL_FILE
        atomic_write(path, lambda fh: torch.save(state_dict, fh))
        return path

    def save_program(self, archive: bytes) -> Path:
        """Write trained_model.pt2 (a ``torch.export.save`` archive) and return its path."""
        path = self.path / PROGRAM_FILE
        atomic_write(path, archive)
        return path

    def save_classes(self, names: Sequence[str]) -> Path:
        """Write classes.json: the class names in the model's output order."""
        return self._save_names(CLASSES_FILE, names)

    def save_features(self, names: Sequence[str]) -> Path:
        """Write features.json: a table's feature columns in the model's input order
        (``COLUMN=VALUE`` for a one-hot text column), so predict reads a CSV by name
        without the session's data."""
        return self._save_names(FEATURES_FILE, names)

    def _save_names(self, name: str, names: Sequence[str]) -> Path:
        path = self.path / name
        atomic_write(path, json.dumps(list(names), indent=1, ensure_ascii=False).encode())
        return path

    def save_snapshot(self, version: int, state_dict: dict[str, torch.Tensor],
                      elapsed_s: float) -> Path:
        """Keep a copy of the weights of ``version`` in snapshots/ (a plain state_dict) and
        note it in metrics.jsonl, so that accuracy over time can be measured afterwards."""
        path = self.path / SNAPSHOT_DIR / f"v{version:07d}.pth"
        atomic_write(path, lambda fh: torch.save(state_dict, fh))
        self.append_metric({"type": "snapshot", "version": version, "path": str(path),
                            "elapsed_s": elapsed_s})
        return path

