"""A table's rows counted as they are read, for a person (``PrepareProgress``, throttled
as images' are) and for Cancel (``PrepareCancelled``).

A table is read in passes (``table_cache``: one to decide its layout, one to encode it;
``table_test``: one), and the bar spans them all: ``done`` and ``total`` count rows over
every pass, so the bar only moves forward, while the text says the pass's own rows
("reading people.csv: 40,000 of 100,000 rows").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from ..pacing import Throttle
from .image_cache import (LOG_EVERY_S, REPORT_EVERY_S, Cancel, PrepareCancelled,
                          PrepareProgress, Progress)

log = logging.getLogger(__name__)

CHECK_ROWS = 512  # rows between two looks at Cancel and the clock (~10-50 ms of reading)
Row = TypeVar("Row")


class RowWatch:
    """Counts the rows of ``passes`` passes over one table of about ``rows`` rows (an
    estimate is fine: each pass ends at its full share), tells ``progress`` and raises
    PrepareCancelled once ``cancel()`` says so."""

    def __init__(self, name: str, rows: int, *, passes: int = 1,
                 progress: Progress | None = None, cancel: Cancel | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name, self.rows, self.passes = name, max(1, rows), passes
        self.progress, self.cancel = progress, cancel
        self._pass = 0
        self._told = PrepareProgress(0, 0, "")  # the last told: ``done`` never less after it
        self._tell = Throttle(REPORT_EVERY_S, waiting=True, clock=clock)
        self._log = Throttle(LOG_EVERY_S, waiting=True, clock=clock)

    def over(self, rows: Iterable[Row], verb: str, total: int = 0) -> Iterator[Row]:
        """``rows`` as they are, counted as one pass (``total``: its rows, when known
        better than the estimate), its end told in full."""
        if total > 0:
            self.rows = total
        count = 0
        for count, row in enumerate(rows, start=1):
            if count % CHECK_ROWS == 0:
                self._at(verb, count, force=False)
            yield row
        self._at(verb, max(count, self.rows), force=True)
        self._pass += 1

    def check(self) -> None:
        """Raise PrepareCancelled when ``cancel()`` says so (before anything is cached)."""
        if self.cancel is not None and self.cancel():
            raise PrepareCancelled(f"preparing {self.name} was cancelled")

    def _at(self, verb: str, count: int, *, force: bool) -> None:
        self.check()
        total = self.rows * self.passes
        done = min(total, max(self._told.done, self._pass * self.rows + min(count, self.rows)))
        text = f"{verb} {self.name}: {count:,} of {max(count, self.rows):,} rows"
        last = force and self._pass + 1 == self.passes
        if self._log.due(force=last):
            log.info("%s", text)
        now = PrepareProgress(total if last else done, total, text)
        if self.progress is not None and now != self._told and self._tell.due(force=force):
            self._told = now  # a pass's last row and its end are told once
            self.progress(now)
