"""Progress display for the command line: a tqdm bar fed by hub or worker events."""

from __future__ import annotations

import logging
import sys
from typing import Any

from tqdm import tqdm


class TqdmHandler(logging.Handler):
    """Log lines that do not break the progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        tqdm.write(self.format(record), file=sys.stderr)


def setup_logging(verbose: int) -> None:
    """Warnings by default; -v for info, -vv for debug."""
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    handler = TqdmHandler()
    handler.setFormatter(logging.Formatter("%(levelname).1s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


class RoundBar:
    """A bar over rounds showing loss, accuracy and workers; silent when ``quiet``."""

    def __init__(self, total: int, *, quiet: bool, initial: int = 0, desc: str = "training"):
        self.bar = None if quiet else tqdm(total=total, initial=initial, desc=desc, unit="round",
                                          dynamic_ncols=True, file=sys.stderr)
        self.postfix: dict[str, str] = {}

    def hub_event(self, event: dict[str, Any]) -> None:
        """Update from a HubSession event."""
        kind = event["kind"]
        if kind == "round":
            self._advance(event["version"], loss=f"{event['loss']:.3f}",
                          workers=str(len(event["workers"])),
                          wire=f"{(event['bytes_in'] + event['bytes_out']) / 1e3:.0f}kB",
                          busy=f"{100 * event['busy']:.0f}%")
        elif kind == "mode" and self.bar is not None:
            self.bar.write(f"auto: {event['preset']} preset ({event['codec']}, "
                           f"{event['local_steps']} local steps) for a "
                           f"{8 * event['bandwidth'] / 1e6:.0f} Mbit/s link", file=sys.stderr)
        elif kind == "eval":
            self._set(acc=f"{100 * event['accuracy']:.1f}%")
        elif kind in ("worker_joined", "worker_left") and self.bar is not None:
            verb = "joined" if kind == "worker_joined" else "left"
            w = event["worker"]
            self.bar.write(f"worker {w['id']} ({w['name']}, {w['device']}) {verb}", file=sys.stderr)

    def worker_event(self, event: dict[str, Any]) -> None:
        """Update from a WorkerSession event."""
        if event["kind"] == "round":
            self._advance(event["version"] + max(1, event.get("steps", 0)),
                          loss=f"{event['loss']:.3f}",
                          pushed=str(event["pushed"]), rejected=str(event["rejected"]))
        elif event["kind"] == "joined" and self.bar is not None:
            self.bar.total = event["rounds"]
            self.bar.refresh()

    def _advance(self, position: int, **postfix: str) -> None:
        if self.bar is not None:
            self.bar.update(max(0, position - self.bar.n))
        self._set(**postfix)

    def _set(self, **postfix: str) -> None:
        self.postfix.update(postfix)
        if self.bar is not None:
            self.bar.set_postfix(self.postfix, refresh=False)

    def close(self) -> None:
        """Finish the bar."""
        if self.bar is not None:
            self.bar.close()
