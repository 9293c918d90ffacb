"""A resumed session's window starts where the session stopped: "Resumed at round 1,690 of
2,500", with the loss and accuracy curves of the rounds before, read from its metrics.jsonl.
No Qt.

The window opens before the hub has loaded its checkpoint, so the round shown at first is
the last one metrics.jsonl records; once the session is built (``HostService.session``) its
version is the checkpoint's, and the curves are cut back to it (a hub that was killed
replays the rounds after its last checkpoint: their records are dropped on disk too).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..hub.outputs import METRICS_FILE, metric_records
from .progress_fields import smooth_next
from .progress_state import ProgressState

log = logging.getLogger(__name__)

Series = list[tuple[int, float]]


@dataclass
class History:
    """The rounds and evaluations a session's folder records."""

    loss: Series = field(default_factory=list)
    accuracy: Series = field(default_factory=list)

    @property
    def version(self) -> int:
        return max([v for v, _ in self.loss] + [v for v, _ in self.accuracy] + [0])

    def up_to(self, version: int) -> "History":
        """The records of rounds ``version`` and before."""
        return History([p for p in self.loss if p[0] <= version],
                       [p for p in self.accuracy if p[0] <= version])


def read_history(folder: str | Path) -> History:
    """The loss of each round and each test accuracy in ``folder``'s metrics.jsonl (a torn
    or foreign line is skipped; no file: nothing)."""
    history = History()
    for record in metric_records(Path(folder)):
        _add(history, record)
    return history


def _add(history: History, record: dict[str, Any]) -> None:
    """A record's point (metric_records checked its type and version already; a round
    without a finite loss, or an evaluation without an accuracy, draws none)."""
    kind, version = record.get("type"), record.get("version", 0)
    value = record.get("loss" if kind == "round" else "accuracy")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return
    if kind == "round":
        history.loss.append((version, float(value)))
    elif kind == "eval":
        history.accuracy.append((version, float(value)))


def smoothed(loss: Series) -> Series:
    """The loss curve's smoothed twin, as a live window computes it (an EMA)."""
    out: Series = []
    for version, value in loss:
        out.append((version, smooth_next(out, value)))
    return out


class Resumed:
    """What a resumed hub's window shows before its first new round."""

    def __init__(self, folder: str | Path, state: ProgressState) -> None:
        self.history = read_history(folder)
        self.version = self.history.version
        self.settled = False  # the session's own version has been read
        self._show(state)
        state.note(f"Resumed at round {self.version:,} of {state.total_rounds:,}: the "
                   f"curves before it come from {METRICS_FILE}")

    def _show(self, state: ProgressState) -> None:
        state.version = self.version
        state.loss, state.loss_smooth = list(self.history.loss), smoothed(self.history.loss)
        state.accuracy = list(self.history.accuracy)
        state.status = self.text(state)

    def follow(self, session: Any, state: ProgressState) -> None:
        """Once the hub's session is built, start from its checkpoint's version."""
        if self.settled or session is None:
            return
        self.settled = True
        version = int(session.version)
        if version != self.version and state.version == self.version:
            self.history, self.version = self.history.up_to(version), version
            self._show(state)

    def text(self, state: ProgressState) -> str:
        """The progress line: "Resumed at round N of M" until a new round closes."""
        if state.version == self.version and state.active:
            return f"Resumed at round {self.version:,} of {state.total_rounds:,}"
        return f"Round {state.version:,} of {state.total_rounds:,}"
