"""The Join dialog: type the PIN, pair off the GUI thread, show refusals in place.

Pairing runs in the JoinService's thread; the dialog polls its events. A wrong PIN or a
lock-out ends that runner and leaves the dialog open with the reason, ready for another
try. Success hands the (still running) runner and the events seen so far to the caller.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (QDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
                               QProgressBar, QPushButton, QVBoxLayout, QWidget)

from ..errors import ConfigError
from ..events import Ended, Failed, Joined, PairedWith, PairingWait
from ..join_options import JoinOptions
from ..protocol.auth import typed_pin
from ..schema import Option, spec
from ..service import JoinService, JoinTarget, Tagged
from ..service.join import removed_by
from ..text import sentence
from .words import failure, refusal
from ..service.options import worker_name
from ..service.paired import forget_hub
from .join_choices import WorkerChoices

RunnerFactory = Callable[[JoinTarget, str], JoinService]
PIN_HINT = "The PIN is shown in large digits on the machine that hosts the session."
REMEMBERED = ("This machine has paired with this hub before: Join works without the PIN, in "
              "this session and its later ones, unless the host removed this machine from "
              "its paired machines.")
FORGOTTEN = ("The hub no longer lets this machine in without the PIN: its host removed it "
             "from its paired machines, or turned them off. Type the PIN the hub shows.")
REMOVED_HINTS = {  # why the PIN is asked for again, as the hub last refused this machine
    "removed": "The host of this hub removed this machine from a session. It can join the "
               "host's next session with the PIN the hub shows, or that one if the host "
               "chose Allow again.",
    "blocked": "The host of this hub blocked this machine: it cannot join the host's "
               "sessions until the host chooses Allow again. Then type the PIN the hub "
               "shows.",
}
REMOVED_BY_CODE = {"BANNED": "removed", "BLOCKED": "blocked"}
PIN_MAX_LENGTH = 32  # characters the PIN field takes (a pasted PIN may carry spaces)


def _line(option: Option) -> QLineEdit:
    """A line edit for a join option: its label as the accessible name, its placeholder."""
    line = QLineEdit()
    line.setPlaceholderText(option.placeholder)
    line.setAccessibleName(option.label)
    return line


class JoinDialog(QDialog):
    """Asks for the PIN (and the address when there is no discovered session)."""

    def __init__(self, target: JoinTarget | None, start_runner: RunnerFactory,
                 parent: QWidget | None = None, refresh_ms: int = 100,
                 remembered: Callable[[JoinTarget], bool] | None = None) -> None:
        """``remembered(target)``: this machine joined that hub before, so the hub still
        knows its key and the PIN may be left empty."""
        super().__init__(parent)
        self.target = target
        self._remembered = remembered or (lambda _: False)
        self._start_runner = start_runner
        self.runner: JoinService | None = None  # the paired runner, after accept()
        self.events: list[Tagged] = []  # what it said so far, for the progress window
        self._failure: str | None = None
        self._failure_code = ""
        self.setWindowTitle("Join a session" if target else "Connect to a hub")
        self.setMinimumWidth(440)
        self.address_edit = _line(spec(JoinOptions, "address"))
        self.pin_edit = _line(spec(JoinOptions, "pin"))
        self.pin_edit.setObjectName("PinEntry")
        self.pin_edit.setMaxLength(PIN_MAX_LENGTH)
        self.pin_edit.setMinimumHeight(self.pin_edit.sizeHint().height())
        self.pin_edit.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.choices = WorkerChoices()  # threads, speed limit, pause on battery
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.hide()
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)
        self.busy.setMaximumHeight(6)
        self.busy.hide()
        self.join_button = QPushButton("Join")
        self.join_button.setObjectName("Primary")
        self.join_button.setDefault(True)
        self.join_button.clicked.connect(self.start_pairing)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.reject)
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.poll)
        self._refresh_ms = refresh_ms
        self._build()

    def _build(self) -> None:
        t = self.target
        title = QLabel(f"Join “{t.label}”" if t else "Connect to a hub by address")
        title.setObjectName("Title")
        title.setWordWrap(True)
        where = QLabel(f"Hub at {t.host}:{t.port}" + (f". Note: {t.note}." if t.note else "")
                       if t else "For networks where sessions do not show up by themselves "
                                 "(multicast blocked): type the address the hub shows.")
        where.setObjectName("Subtitle")
        where.setWordWrap(True)
        form = QFormLayout()
        if t is None:
            form.addRow(self.address_edit.accessibleName(), self.address_edit)
        form.addRow(self.pin_edit.accessibleName(), self.pin_edit)
        hint = QLabel(PIN_HINT)
        self.hint = hint
        if t is not None and self._remembered(t):
            hint.setText(REMEMBERED)
            self.pin_edit.setPlaceholderText("not needed")
        elif t is not None and (how := removed_by(t, worker_name())):
            hint.setText(REMOVED_HINTS[how])  # why the PIN is asked for again
        hint.setProperty("role", "muted")
        hint.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.join_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(18, 14, 18, 14)
        layout.setSpacing(10)
        for widget in (title, where):
            layout.addWidget(widget)
        layout.addLayout(form)
        layout.addWidget(hint)
        layout.addWidget(self.choices)
        layout.addWidget(self.message)
        layout.addWidget(self.busy)
        layout.addLayout(buttons)
        (self.address_edit if t is None else self.pin_edit).setFocus()

    # ----------------------------------------------------------------- actions
    def start_pairing(self) -> None:
        """Check the inputs, then pair on a background thread."""
        if self.runner is not None:
            return
        try:
            target = self.target or JoinTarget.from_address(self.address_edit.text())
        except ConfigError as exc:
            self._show(str(exc), "error")
            return
        pin = typed_pin(self.pin_edit.text())
        if not pin and not self._remembered(target):
            self._show("Type the PIN the hub shows.", "error")
            return
        try:
            chosen = self.choices.values()  # how much of this machine it shares
        except ConfigError as exc:
            self._show(sentence(str(exc)), "error")
            return
        self._failure, self._failure_code = None, ""
        self.events = []
        runner = self._start_runner(target, pin)
        if isinstance(runner, JoinService):
            runner.choose(**chosen)
        self.runner = runner.start()
        self._set_busy(True)
        self._show(f"Pairing with {target.label}…", "info")
        self.timer.start(self._refresh_ms)

    def poll(self) -> None:
        """Read the pairing runner's events (GUI thread, on the timer)."""
        runner = self.runner
        if runner is None:
            return
        batch = runner.drain()
        self.events.extend(batch)  # all of them: the progress window replays what follows
        for event in batch:
            self._on_event(runner, event)
            if self.result() == QDialog.DialogCode.Accepted or self.runner is None:
                return

    def _on_event(self, runner: JoinService, tagged: Tagged) -> None:
        event = tagged.event
        if isinstance(event, (PairedWith, Joined)):  # Joined alone: a remembered key
            self.timer.stop()
            self.accept()
        elif isinstance(event, Failed):
            self._failure, self._failure_code = failure(event.code, event.message), event.code
            if event.code == "NOT_PAIRED" and not runner.plan.options.pin:
                self._forget_hub(runner.target)
            elif event.code in REMOVED_BY_CODE:  # the service forgot the hub's key
                self._remembered = lambda _: False
                self.hint.setText(REMOVED_HINTS[REMOVED_BY_CODE[event.code]])
                self.pin_edit.setPlaceholderText(spec(JoinOptions, "pin").placeholder)
        elif isinstance(event, PairingWait) and event.code == "LOCKED_OUT":
            self._failure = (refusal("LOCKED_OUT").replace(
                "Wait, then", f"Wait {event.retry_after:.0f} s, then"))
            runner.stop()
        elif isinstance(event, PairingWait):
            self._show(f"The hub is busy; retrying in {event.retry_after:.0f} s…", "info")
        elif isinstance(event, Ended):
            self.timer.stop()
            runner.join(2.0)
            self.runner = None
            self._set_busy(False)
            self._show(self._failure or "Pairing stopped.", "error")
            self._focus_the_cause()

    def _forget_hub(self, target: JoinTarget) -> None:
        """The hub refused this machine's remembered key (its host removed it, or turned
        paired machines off): the PIN is needed, and the next dialog says so too."""
        forget_hub(target, worker_name())
        self._remembered = lambda _: False
        self._failure = FORGOTTEN
        self.hint.setText(PIN_HINT)
        self.pin_edit.setPlaceholderText(spec(JoinOptions, "pin").placeholder)

    def _focus_the_cause(self) -> None:
        """Put the focus on what to fix, its text selected so typing replaces it: the
        address when it could not be reached (if the user typed it), else the PIN."""
        typed = self.target is None and self._failure_code == "UNREACHABLE"
        field = self.address_edit if typed else self.pin_edit
        field.selectAll()
        field.setFocus()

    def reject(self) -> None:
        """Cancel: a pairing in progress is stopped (its owner joins the thread later)."""
        self.timer.stop()
        if self.runner is not None:
            self.runner.stop()
            self.runner = None
        super().reject()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's API
        """Closing the window is a Cancel."""
        if self.result() != QDialog.DialogCode.Accepted and self.runner is not None:
            self.reject()
        super().closeEvent(event)

    # ----------------------------------------------------------------- helpers
    def _set_busy(self, busy: bool) -> None:
        self.busy.setVisible(busy)
        self.join_button.setEnabled(not busy)
        self.pin_edit.setEnabled(not busy)
        self.address_edit.setEnabled(not busy)
        self.choices.set_enabled(not busy)

    def _show(self, text: str, role: str) -> None:
        self.message.setText(text)
        self.message.setProperty("role", role)
        self.message.style().unpolish(self.message)
        self.message.style().polish(self.message)
        self.message.show()
        layout = self.layout()
        if layout is not None:
            layout.activate()
        if self.height() < self.sizeHint().height():  # grow for the text, never squash
            self.resize(self.width(), self.sizeHint().height())
