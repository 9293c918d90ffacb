"""Background sources the main window polls: device probe, LAN sessions, log records. No Qt.

Each one is written to by another thread and read by the GUI thread's timer; they hand over
plain values under a lock, never a Qt object.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence

from ..discovery import DiscoveredSession, DiscoveryError, SessionBrowser
from ..service.threads import in_scope
from ..worker import DeviceChoice, pick_device

log = logging.getLogger(__name__)


class DeviceProbe:
    """Finds this machine's training device off the GUI thread (it runs a tiny torch pass)."""

    def __init__(self, requested: str = "auto") -> None:
        self.requested = requested
        self.result: DeviceChoice | None = None
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name="gui-device-probe", daemon=True)

    def start(self) -> "DeviceProbe":
        """Start probing; returns self."""
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        """True once a result or an error is known."""
        return self.result is not None or self.error is not None

    def join(self, timeout_s: float) -> None:
        """Wait for the probe thread."""
        if self._thread.ident is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            self.result = pick_device(self.requested)
        except Exception as exc:  # a broken torch install must not take the app down
            log.exception("device probe failed")
            self.error = f"{type(exc).__name__}: {exc}"


class DiscoveryFeed:
    """A live list of the sessions on the LAN: the browser thread writes, the GUI takes."""

    def __init__(self, interfaces: Sequence[str] | None = None) -> None:
        self.interfaces = None if interfaces is None else list(interfaces)
        self.error: str | None = None
        self._lock = threading.Lock()
        self._latest: list[DiscoveredSession] | None = None
        self._browser: SessionBrowser | None = None

    def start(self) -> "DiscoveryFeed":
        """Start browsing; a failure is kept in ``error`` (the address button still works)."""
        try:
            self._browser = SessionBrowser(interfaces=self.interfaces,
                                           on_change=self._on_change).start()
        except DiscoveryError as exc:
            self.error = str(exc)
            log.warning("LAN discovery unavailable: %s", exc)
        return self

    def take(self) -> list[DiscoveredSession] | None:
        """The new list if it changed since the last call, else None."""
        with self._lock:
            latest, self._latest = self._latest, None
        return latest

    def close(self) -> None:
        """Stop browsing and join the browser's threads (idempotent)."""
        browser, self._browser = self._browser, None
        if browser is not None:
            browser.close()

    def _on_change(self, sessions: list[DiscoveredSession]) -> None:
        with self._lock:  # on the browser thread: store and return at once
            self._latest = list(sessions)


class LogTap(logging.Handler):
    """Collects one session's warnings for its log pane; attach while its window is open.

    Only records from the session's own threads count (``scope``: its service's thread,
    after which every thread of the session is named), so two sessions in one app never
    see each other's messages."""

    def __init__(self, scope: str, logger_name: str = "computeshare_desktop",
                 level: int = logging.WARNING,
                 render: Callable[[logging.LogRecord], str] | None = None) -> None:
        super().__init__(level)
        self.scope = scope
        self.render = render  # a record's text for the pane; None: its message
        self.logger_name = logger_name
        self.addFilter(lambda record: in_scope(record.threadName or "", self.scope))
        self.records: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        """Queue the formatted message (any thread)."""
        try:
            self.records.put(self.render(record) if self.render else self.format(record))
        except Exception:  # logging must never raise into the caller
            self.handleError(record)

    def attach(self) -> "LogTap":
        """Start collecting."""
        logging.getLogger(self.logger_name).addHandler(self)
        return self

    def detach(self) -> None:
        """Stop collecting."""
        logging.getLogger(self.logger_name).removeHandler(self)

    def take(self) -> list[str]:
        """Messages collected since the last call."""
        lines: list[str] = []
        while True:
            try:
                lines.append(self.records.get_nowait())
            except queue.Empty:
                return lines
