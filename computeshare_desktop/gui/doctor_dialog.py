""""Check network…": the doctor's report in a dialog (service/doctor.py does the checks).

The checks take a few seconds (mDNS listens for a while), so they run on a thread of their
own; a timer on the GUI thread picks up the report, as the main window does with discovery.
"""

from __future__ import annotations

import threading
from typing import Callable

from PySide6.QtCore import QTimer
from PySide6.QtGui import QCloseEvent, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton,
                               QVBoxLayout, QWidget)

from ..service.doctor import DoctorOptions, diagnose
from ..service.doctor_report import Report
from .words import for_app

POLL_MS = 100
Runner = Callable[[DoctorOptions], Report]


class DoctorDialog(QDialog):
    """Runs the network check (against ``hub``, a selected session, when given) and shows
    each item with its cause and fix; Check again, Copy, Close."""

    def __init__(self, parent: QWidget | None, *, hub: str | None = None,
                 interfaces: tuple[str, ...] | None = None, run: Runner | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Check network")
        self.options = DoctorOptions(hub=hub, interfaces=interfaces)
        self._run = run
        self._thread: threading.Thread | None = None
        self._outcome: Report | Exception | None = None
        self.report: Report | None = None
        target = f"this machine and the hub at {hub}" if hub else "this machine"
        self.headline = QLabel(f"Checking {target}…")
        self.headline.setObjectName("SectionTitle")
        self.headline.setWordWrap(True)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setAccessibleName("Network check report")
        self.again_button = QPushButton("Check again")
        self.again_button.clicked.connect(self.start)
        self.copy_button = QPushButton("Copy")
        self.copy_button.clicked.connect(self._copy)
        self.close_button = QPushButton("Close")
        self.close_button.setObjectName("Primary")
        self.close_button.clicked.connect(self.close)
        buttons = QHBoxLayout()
        buttons.addWidget(self.copy_button)
        buttons.addStretch(1)
        buttons.addWidget(self.again_button)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.headline)
        layout.addWidget(self.text, 1)
        layout.addLayout(buttons)
        self.resize(760, 440)
        self.timer = QTimer(self)
        self.timer.timeout.connect(self._poll)

    def start(self) -> None:
        """Run the checks in the background (again, when they already ran)."""
        if self.running:
            return
        self._outcome, self.report = None, None
        self.again_button.setEnabled(False)
        self.text.setPlainText("Checking interfaces, mDNS and ports"
                               + (", then the hub's link" if self.options.hub else "") + "…")
        self._thread = threading.Thread(target=self._work, name="doctor", daemon=True)
        self._thread.start()
        self.timer.start(POLL_MS)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout_s: float) -> None:
        """Block until the checks are done (tests, and closing)."""
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._poll()

    def _work(self) -> None:
        try:
            self._outcome = (self._run or diagnose)(self.options)
        except Exception as exc:  # shown in the dialog; a bad address is a ConfigError
            self._outcome = exc

    def _poll(self) -> None:
        if self.running or self._outcome is None:
            return
        self.timer.stop()
        self.again_button.setEnabled(True)
        outcome, self._outcome = self._outcome, None
        if isinstance(outcome, Exception):
            self.headline.setText("The check could not run")
            self.text.setPlainText(str(outcome))
            return
        self.report = outcome
        warned = any(item.status.value == "warn" for item in outcome.items)
        where = ("" if outcome.ok and not warned else
                 ": the cause and the fix are under each "
                 + ("FAIL" if not outcome.ok else "WARN") + " line")
        self.headline.setText(outcome.summary() + where + ".")
        self.text.setPlainText(for_app(outcome.text()))  # the app's controls, not flags

    def _copy(self) -> None:
        clipboard = QGuiApplication.clipboard()
        if clipboard is not None:
            clipboard.setText(self.text.toPlainText())

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's API
        self.timer.stop()
        if self._thread is not None:
            self._thread.join(0.1)  # a daemon: the checks end on their own within seconds
        super().closeEvent(event)
