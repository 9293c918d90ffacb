"""TensorBoard event files beside metrics.jsonl (``--tensorboard``): the same numbers, for
people who read curves in TensorBoard (``tensorboard --logdir OUT/tensorboard``).

The session hands over each record it appends to metrics.jsonl (``add``); a round record
becomes the training loss, samples/s, the bytes of the round (whole and split by purpose),
the learning rate and each worker's share of the round's samples, an evaluation record the
test accuracy and loss. The step is the record's model version, which is the round in
synchronous mode (a round of H local steps advances it by H). Writing is the
``SummaryWriter``'s: a call only queues the event for its own thread, which writes the file
and flushes it every ``FLUSH_S`` seconds; an evaluation and the end flush at once. Its
queue is long, so a slow disk never holds up the hub's loop.

A resumed session appends to the same folder (by itself when the folder holds event
files: ``continues``): its writer opens with ``purge_step`` at the checkpoint's next
version, so TensorBoard drops what the previous run wrote after its checkpoint (the rounds
that are replayed), as ``cut_metrics`` does in metrics.jsonl.

``tensorboard`` is an optional extra, imported only when a session writes these files;
``tensorboard_valid`` is the option's check, so ``--tensorboard`` without it is a
ConfigError that says how to install it, before the session opens. Qt-free.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..events import WorkerInfo

log = logging.getLogger(__name__)

TENSORBOARD_DIR = "tensorboard"  # in the session's output folder, beside metrics.jsonl
INSTALL = 'pip install "computeshare-desktop[tensorboard]"'
MISSING = f"TensorBoard logs need the tensorboard package: {INSTALL}"
FLUSH_S = 10  # the writer's thread flushes what is queued this often
QUEUE = 1000  # events queued for the writer's thread before a call waits for it
TRAFFIC = ("data_bytes", "model_bytes", "update_bytes")  # the bytes by purpose


def missing() -> str:
    """What to install for TensorBoard logs; "" when the package is there."""
    try:
        import tensorboard  # noqa: F401  (light: its modules load when used)
    except ImportError:
        return MISSING
    return ""


def tensorboard_valid(wanted: bool) -> bool:
    """The option's check: ConfigError (with the pip command) when it is on and the
    tensorboard package is not installed."""
    if wanted and missing():
        raise ConfigError(MISSING)
    return True


def folder_of(out_dir: str | Path) -> Path:
    """The event files' folder of a session's output folder."""
    return Path(out_dir) / TENSORBOARD_DIR


def continues(out_dir: str | Path) -> bool:
    """True when a session resumed in ``out_dir`` should go on writing event files: the
    folder holds some, and the package is here (a warning says so when it is not)."""
    if not folder_of(out_dir).is_dir():
        return False
    if missing():
        log.warning("%s holds TensorBoard logs, but this resume cannot add to them: %s",
                    out_dir, MISSING)
        return False
    return True


def share_tags(workers: Sequence[WorkerInfo]) -> dict[int, str]:
    """Each worker's tag for its share: its name, with its id where two share a name."""
    names = [w.name for w in workers]
    return {w.id: f"compute_share/{w.name}" if names.count(w.name) == 1 else
            f"compute_share/{w.name} #{w.id}" for w in workers}


class TensorBoardLog:
    """One session's event files; ``add`` takes metrics.jsonl's records. Each method may
    raise OSError (the session reports it as a disk error and trains on)."""

    def __init__(self, out_dir: str | Path, resumed_at: int | None = None) -> None:
        """``resumed_at``: the version a resumed session starts from (what the previous
        run wrote after it is dropped); None for a new session."""
        from torch.utils.tensorboard import SummaryWriter  # the optional extra

        self.path = folder_of(out_dir)
        purge = None if resumed_at is None else resumed_at + 1
        self._writer = SummaryWriter(str(self.path), max_queue=QUEUE, flush_secs=FLUSH_S,
                                     purge_step=purge)
        self._samples: dict[int, int] = {}  # each worker's samples so far, by id
        self._closed = False

    def add(self, record: dict[str, Any], workers: Sequence[WorkerInfo] = ()) -> None:
        """Write the scalars of one metrics.jsonl record (``workers``: a round's, as its
        event lists them); other kinds of records are not curves and are skipped."""
        if record.get("type") == "round":
            self._round(record, workers)
        elif record.get("type") == "eval":
            step = int(record["version"])
            self._scalar("test/accuracy", record["accuracy"], step)
            self._scalar("test/loss", record["test_loss"], step)
            self._writer.flush()  # an evaluation is what people wait for

    def _round(self, record: dict[str, Any], workers: Sequence[WorkerInfo]) -> None:
        step = int(record["version"])
        self._scalar("train/loss", record["loss"], step)
        if record.get("lr") is not None:
            self._scalar("train/learning_rate", record["lr"], step)
        if record["seconds"] > 0:
            self._scalar("speed/samples_per_s", record["samples"] / record["seconds"], step)
        self._scalar("traffic/bytes", record["bytes_in"] + record["bytes_out"], step)
        for name in ("bytes_in", "bytes_out", *TRAFFIC):
            self._scalar(f"traffic/{name}", record[name], step)
        self._scalar("workers/contributors", record["contributors"], step)
        for tag, share in self._shares(record["samples"], workers).items():
            self._scalar(tag, share, step)

    def _shares(self, samples: int, workers: Sequence[WorkerInfo]) -> dict[str, float]:
        """Each worker's part of this round's samples: what its count grew by since the
        previous round (a worker's count starts at 0 when it joins)."""
        grew = {w.id: w.samples - self._samples.get(w.id, 0) for w in workers}
        self._samples = {w.id: w.samples for w in workers}
        tags = share_tags(workers)
        return {tags[i]: n / samples for i, n in grew.items() if n > 0 and samples > 0}

    def _scalar(self, tag: str, value: float, step: int) -> None:
        self._writer.add_scalar(tag, float(value), step)

    def flush(self) -> None:
        """Write what is queued now."""
        self._writer.flush()

    def close(self) -> None:
        """Write what is queued, close the file and end the writer's thread (idempotent)."""
        if not self._closed:
            self._closed = True
            self._writer.close()
