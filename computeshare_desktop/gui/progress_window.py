"""The progress window of a hub or a worker: it renders a ProgressState, nothing more.

A QTimer on the GUI thread drains the runner's event queue every ``refresh_ms`` and applies
the whole batch at once (a session at 60 rounds/s costs the event loop one update per
tick, not sixty signals). Labels and the progress bar follow every tick; the curves and the
workers table, whose repaints cost milliseconds of Python in pyqtgraph, every
``SLOW_EVERY`` ticks. Stop/Leave only ask the runner to stop; the runner's thread ends on
its own and the window shows it.
"""

from __future__ import annotations

import time
from typing import Callable, Protocol

from PySide6.QtCore import QCoreApplication, QEvent, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QCloseEvent, QDesktopServices
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QMainWindow, QProgressBar, QPushButton,
                               QSplitter, QVBoxLayout, QWidget)

from ..models.specs import model_label
from ..service import HostService, JoinService, Tagged, approve_code
from .banner import BannerArea
from .charts import ChartsPanel
from .code_dialog import CodeQuestion
from .confirm import StopQuestion
from .kick_question import KickQuestion
from .removed_machines import RemovedMachinesCard
from .formatting import human_bytes, human_duration, human_pair, human_rate, percent
from .pause_control import PauseControl
from .panels import FinishCard, FolderDialog, LogPane, StatCard, row
from .pin_card import PinCard
from .placement import available_geometry, fit
from . import progress_worker
from .progress_hub import hub_traffic
from .progress_head import distinct_title, steady_width
from .progress_rows import ACTIVE_STATES, mode_words
from .progress_state import CHIP_TEXTS, ProgressState
from .resumed import Resumed
from .sources import LogTap
from .words import record_sentence
from .workers_table import WorkersTable


MIN_TABLE_HEIGHT = 150
SLOW_EVERY = 5  # ticks between redraws of the curves and the table (~2 per second)


class Runner(Protocol):
    """What the window needs from a HostService or a JoinService."""

    @property
    def running(self) -> bool: ...
    @property
    def stopping(self) -> bool: ...
    @property
    def scope(self) -> str: ...
    def drain(self) -> list[Tagged]: ...
    def stop(self) -> None: ...
    def join(self, timeout_s: float) -> bool: ...


MIN_CHARTS_HEIGHT = 120
# Each hub stat card's widest usual figure: shown whole at the window's minimum size (a longer
# one is cut with "…"; seven cards of these need about 910 px)
WIDEST = {"loss": "0.0000", "accuracy": "100.0%", "per_round": "999.9 KB",
          "busy": "100%", "traffic": "999.9 / 999.9 MB", "bandwidth": "999.9 KB/s",
          "workers": "10 of 10"}


class ProgressWindow(QMainWindow):
    """Progress bar, curves, workers, traffic, log, Stop/Leave and, at the end, the result."""

    closed = Signal(object)  # this window, once closed (its runner may still be stopping)
    rejoin = Signal(object)  # this window, once its person approved the hub's code: join again

    def __init__(self, runner: Runner, state: ProgressState, *, title: str, subtitle: str,
                 pin: str | None = None, refresh_ms: int = 100,
                 traffic: Callable[[], tuple[int, int]] | None = None,
                 question: StopQuestion | None = None,
                 code_question: CodeQuestion | None = None) -> None:
        super().__init__()
        self.runner, self.state, self._traffic = runner, state, traffic
        self.question = question  # None: stop without asking
        self.kick_question = KickQuestion()  # a kick always asks first
        self.code_question = code_question  # None: code a hub offers is refused, unasked
        self._asked_code = False
        self.confirmed = False  # the user already said yes (e.g. to quitting the app)
        self.setWindowTitle(distinct_title(title))  # two sessions of one name differ
        self.pin_card = PinCard(pin) if pin else None
        self._ticks = 0
        self._shown_final: object = None
        self.resumed: Resumed | None = None  # a resumed hub's start (gui/resumed.py)
        self.folder_dialog: FolderDialog | None = None  # the output folder, no file manager
        self._build(title, subtitle)
        self.tap = LogTap(runner.scope, render=record_sentence).attach()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.refresh)
        self.timer.start(refresh_ms)
        self.resize(1120, 860)

    @classmethod
    def for_hub(cls, runner: HostService, refresh_ms: int = 100,
                question: StopQuestion | None = None) -> "ProgressWindow":
        """The window of a hub this app runs."""
        o, name = runner.plan.config, runner.session_name()
        state = ProgressState("hub", total_rounds=o.rounds, name=name,
                              expected_workers=o.workers)
        window = cls(runner, state, title=f"Hosting {name}", pin=runner.pin,
                     subtitle=" · ".join(filter(None, (
                         f"{model_label(o.model)} on {o.dataset}", f"{o.workers} worker(s)",
                         f"{o.rounds} rounds of {o.batch_size} per worker",
                         mode_words(o.updates, o.aggregation)))),
                     refresh_ms=refresh_ms, traffic=hub_traffic(runner), question=question)
        if runner.plan.resume:  # where it stopped, and the curves before, at once
            window.resumed = Resumed(runner.out_path, state)
        return window

    @classmethod
    def for_worker(cls, runner: JoinService, events: list[Tagged] | None = None,
                   refresh_ms: int = 100, question: StopQuestion | None = None,
                   code_question: CodeQuestion | None = None) -> "ProgressWindow":
        """The window of a worker this app runs; ``events``: those the Join dialog read;
        ``code_question``: asks whether to run code the hub offers (then ``rejoin``)."""
        name = runner.plan.name
        state = ProgressState("worker", name=name)
        state.earlier = progress_worker.pick_up(progress_worker.hub_of(runner.target))
        state.apply(events or [])
        return cls(runner, state, title=f"Training for {runner.target.label}",
                   subtitle=f"Worker {name} · hub {runner.target.host}:"
                            f"{runner.target.port}",
                   refresh_ms=refresh_ms, traffic=runner.traffic, question=question,
                   code_question=code_question)

    # ----------------------------------------------------------------- layout
    def _build(self, title: str, subtitle: str) -> None:
        hub = self.state.role == "hub"
        self.title = QLabel(title)
        self.title.setObjectName("Title")
        self.subtitle = QLabel(subtitle)
        self.subtitle.setObjectName("Subtitle")
        self.subtitle.setWordWrap(True)  # beside the PIN: the window stays narrow
        self.received = QLabel()  # a worker's model, as it got it (graph checked, built-in)
        self.received.setObjectName("Subtitle")
        self.received.setWordWrap(True)
        self.received.hide()
        self.chip = QLabel("Starting")
        self.chip.setObjectName("StatusChip")
        steady_width(self.chip, CHIP_TEXTS)  # a new text moves nothing beside it
        self.banner = QLabel()
        self.banner.setObjectName("Banner")
        self.banner_area = BannerArea(self.banner)  # wrapped; past a few lines it scrolls
        self.progress_bar = QProgressBar()
        self.progress_bar.setTextVisible(False)
        self.progress_label = QLabel("Waiting for the session to start")
        self.progress_label.setWordWrap(True)
        self.eta_label = QLabel("ETA —")
        self.eta_label.setProperty("role", "muted")
        cards = [("loss", "Training loss"), ("accuracy", "Test accuracy"),
                 ("per_round", "Per round"), ("busy", "Devices busy"),
                 ("traffic", "Sent / received"), ("bandwidth", "Bandwidth")]
        if hub:
            cards.append(("workers", "Workers"))
        else:  # this machine's own share: its compute time and its gradients
            cards[2:2] = [("compute", "Compute time")]  # short: the window needs < 1,024 px
            cards.append(("pushed", "Gradients pushed"))
        self.cards = {key: StatCard(name, widest=WIDEST.get(key, "") if hub else "")
                      for key, name in cards}  # (a worker's eight would need 1,145 px)
        if not hub:
            self.cards["compute"].setToolTip("How long this machine computes one gradient")
        self.cards["loss"].setToolTip("The last round's loss, as in metrics.jsonl (a worker: "
                                      "its last gradient's); the chart also draws it smoothed")
        self.charts = ChartsPanel(second="accuracy")  # a worker hears the hub's evaluations
        self.charts.setMinimumHeight(MIN_CHARTS_HEIGHT)  # the window fits a 720 px screen
        self.workers_table = WorkersTable(kickable=hub)
        self.workers_table.setMinimumHeight(MIN_TABLE_HEIGHT)  # three rows at the least
        self.workers_table.setAccessibleName("Workers")
        self.removed_card = RemovedMachinesCard(self.runner, self.state.note) if hub else None
        self.kick_button = QPushButton("Kick worker")
        self.kick_button.setToolTip("Remove the selected worker from this session (it can "
                                    "join your next one with the PIN), or block it")
        self.kick_button.setEnabled(False)
        self.kick_button.setVisible(hub)
        self.kick_button.clicked.connect(self.kick_selected)
        self.workers_table.kick_requested.connect(self.kick)
        self.workers_table.itemSelectionChanged.connect(self._update_kick)
        if self.pin_card is not None:
            self.pin_card.new_button.clicked.connect(self.new_pin)
        self.log_pane = LogPane()
        self.log_pane.setAccessibleName("Session log")
        self.finish_card = FinishCard()
        self.finish_card.hide()
        self.finish_card.open_folder.connect(self.open_output_folder)
        self.stop_button = QPushButton("Stop session" if hub else "Leave session")
        self.stop_button.setObjectName("Danger")
        self.stop_button.clicked.connect(self.stop_session)
        self.pause_control = (PauseControl(self.runner)  # a worker can pause
                              if isinstance(self.runner, JoinService) else None)
        self.close_button = QPushButton("Close")
        self.close_button.clicked.connect(self.close)
        self.setCentralWidget(self._layout())

    def _layout(self) -> QWidget:
        head = QHBoxLayout()
        titles = QVBoxLayout()
        titles.setSpacing(2)
        titles.addWidget(self.title)
        titles.addWidget(self.subtitle)
        titles.addWidget(self.received)
        if self.pin_card is not None:  # beside the PIN card: in the height it takes anyway
            titles.addWidget(self.banner_area)
        titles.addStretch(1)
        head.addLayout(titles, 1)
        if self.pin_card is not None:  # beside the titles: the window fits a 720 px screen
            head.addWidget(self.pin_card, 1, Qt.AlignmentFlag.AlignTop)  # its hint: 3 lines
        head.addWidget(self.chip, 0, Qt.AlignmentFlag.AlignTop)
        progress = QHBoxLayout()
        progress.addWidget(self.progress_label, 1)  # all the width: one line, no wrapping
        progress.addWidget(self.eta_label)
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(self._workers_side())
        lower.addWidget(self.log_pane)
        lower.setSizes([700, 400])
        lower.setStretchFactor(0, 3)
        lower.setStretchFactor(1, 2)
        buttons = QHBoxLayout()
        buttons.addWidget(self.kick_button)
        if self.pause_control is not None:  # why it is paused, then Pause/Resume
            buttons.addWidget(self.pause_control.label)
        buttons.addStretch(1)
        if self.pause_control is not None:
            buttons.addWidget(self.pause_control.button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.close_button)
        body = QVBoxLayout()
        body.setContentsMargins(20, 16, 20, 16)
        body.setSpacing(10)  # the hub window, PIN and all, fits a 720 px screen
        body.addLayout(head)
        if self.pin_card is None:
            body.addWidget(self.banner_area)
        body.addLayout(progress)
        body.addWidget(self.progress_bar)
        body.addLayout(row(*self.cards.values()))
        body.addWidget(self.charts, 3)
        body.addWidget(lower, 2)
        body.addWidget(self.finish_card)
        body.addLayout(buttons)
        canvas = QWidget()
        canvas.setObjectName("Canvas")
        canvas.setLayout(body)
        return canvas

    def _workers_side(self) -> QWidget:
        """The workers table, and under it the machines the session refuses (a hub's)."""
        if self.removed_card is None:
            return self.workers_table
        side = QWidget()
        column = QVBoxLayout(side)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(6)
        column.addWidget(self.workers_table, 1)
        column.addWidget(self.removed_card)
        return side

    # ----------------------------------------------------------------- refresh
    def refresh(self) -> None:
        """Drain the runner's events, fold them into the state, render (GUI thread)."""
        events = self.runner.drain()
        self.state.apply(events)
        if self.runner.stopping:  # Stop (or Leave) was pressed: say so before the thread ends
            self.state.stop_asked()
        if self.resumed is not None:
            self.resumed.follow(getattr(self.runner, "session", None), self.state)
        if self.pause_control is not None:
            self.pause_control.apply(events)
        if self._traffic is not None:
            self.state.set_traffic(*self._traffic())
        if self.removed_card is not None:
            self.removed_card.refresh()
        self.state.tick()
        lines = self.state.take_log() + self.tap.take()
        self.log_pane.add_lines(lines, time.strftime("%H:%M:%S"))
        self._render()
        if self.state.closed and not self.runner.running:
            self.timer.setInterval(1000)  # nothing more will come; keep "last seen" fresh

    def _render(self) -> None:
        s = self.state
        now = s.clock()
        self._render_status()
        total = max(1, s.total_rounds)
        if self.progress_bar.maximum() != total:
            self.progress_bar.setRange(0, total)
        self.progress_bar.setValue(min(s.version, total))
        if s.received and self.received.text() != s.received:
            self.received.setText(s.received)
            self.received.show()
        if s.mode and s.mode not in self.subtitle.text():  # a worker hears it on joining
            self.subtitle.setText(f"{self.subtitle.text()} · {s.mode}")
        if s.total_rounds:
            self.progress_label.setText(self.resumed.text(s) if self.resumed else
                                        f"Round {s.version:,} of {s.total_rounds:,}")
        elapsed = s.elapsed_s()
        eta = "ETA paused" if s.on_hold() else f"ETA {human_duration(s.eta_s())}"
        self.eta_label.setText(f"{eta} · elapsed {human_duration(elapsed)}" if s.active else
                               f"Elapsed {human_duration(elapsed)}")
        c = self.cards
        c["loss"].set_value(f"{s.loss[-1][1]:.4f}" if s.loss else "—")  # the last round's
        per_round = s.bytes_per_round()
        c["per_round"].set_value(human_bytes(int(per_round)) if per_round is not None else "—")
        busy = s.devices_busy()  # working devices only: "—" while none works
        c["busy"].set_value(f"{100 * busy:.0f}%" if busy is not None else "—")
        c["traffic"].set_value(human_pair(s.bytes_sent, s.bytes_received))
        c["bandwidth"].set_value(human_rate(s.bandwidth()))
        accuracy = s.latest_accuracy()
        c["accuracy"].set_value(percent(accuracy) if accuracy is not None else "—")
        if s.role == "hub":
            c["workers"].set_value(f"{s.active_workers()} of {s.expected_workers}")
        else:
            c["compute"].set_value(f"{s.compute_ms[-1][1]:.0f} ms" if s.compute_ms else "—")
            c["pushed"].set_value(f"{s.pushed:,}")
        self._ticks += 1
        if self._ticks % SLOW_EVERY == 1 or not s.active:
            self.charts.show_series(s.loss, s.loss_smooth, s.accuracy, s.total_rounds)
            self.workers_table.show_rows(list(s.workers.values()), now)
            self._update_kick()  # a row that changed under the selection: Kick follows it

    def _render_status(self) -> None:
        s = self.state
        text, look = s.chip()
        if self.chip.text() != text:
            self.chip.setText(text)
            self.chip.setProperty("phase", look)
            self.chip.style().unpolish(self.chip)
            self.chip.style().polish(self.chip)
        self.chip.setToolTip(s.chip_tip())
        self.banner_area.show_banner(s.banner)
        if self.pin_card is not None and s.port is not None:
            self.pin_card.set_hint(self._join_hint())
        if s.final is not None and s.final is not self._shown_final:  # the hub's may follow
            self._shown_final = s.final
            self.finish_card.show_result(s.final, s.out_dir, s.role)
            self._make_room()
            self.finish_card.show()
        if self.pause_control is not None:
            self.pause_control.set_active(s.active and not self.runner.stopping)
        if self.pin_card is not None and (s.stopping or not s.active):
            self.pin_card.end()  # no New PIN (nor Copy) for a session that ends
        if not s.active:
            self.stop_button.hide()
        elif self.runner.stopping:
            self.stop_button.setEnabled(False)
        elif s.role == "hub":  # "Stop training" only once there is a training to stop
            self.stop_button.setText("Stop training" if s.phase == "training" else
                                     "Stop session")
        if s.phase == "failed" and not self.progress_bar.isHidden():  # the banner says it
            self._make_room()
        if s.code_offer is not None and not self._asked_code:
            self._asked_code = True  # once: the question is modal, so not from this render
            QTimer.singleShot(0, self.ask_code)

    def _make_room(self) -> None:
        """The finish card (or a failure's banner) takes the place of what the end left
        idle: the round line and bar (the card says the rounds) and a hub's PIN card (its PIN
        no longer works), so the ended window needs no more height than the running one;
        then it is fitted inside its screen again (a worker's card is the taller)."""
        for widget in (self.progress_label, self.eta_label, self.progress_bar):
            widget.hide()
        if self.pin_card is not None:
            self.pin_card.hide()
        QTimer.singleShot(0, self.refit)

    def refit(self) -> None:
        """Keep the window inside the available geometry of its screen (placement.fit)."""
        if self.isVisible() and not (self.isMaximized() or self.isFullScreen()):
            for _ in range(3):  # nested layouts: the sizes the last values need, first
                QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
            fit(self, available_geometry(self))

    def _join_hint(self) -> str:
        s = self.state
        if not s.active or s.stopping:
            return "The session is over: this PIN no longer works."
        where = s.addresses[0] if s.addresses else "this computer's address"
        return (f"On each worker: open ComputeShare, select “{s.name}” and click Join, or "
                f"use Connect to address… with {where}:{s.port}")

    # ----------------------------------------------------------------- actions
    def ask_code(self) -> bool:
        """Ask whether to run the code the hub offered (the default: don't); approved,
        store the approval (that hash, that hub) and ask to join again (``rejoin``)."""
        offer = self.state.code_offer
        if offer is None or self.code_question is None \
                or not self.code_question.ask(self, offer):
            return False
        try:
            approve_code(offer)
        except OSError as exc:
            self.state.note(f"The approval could not be saved: {exc}")
            return False
        self.state.note(f"Approved {offer.model} (sha256 {offer.sha256}) for this hub; "
                        f"joining again")
        self.rejoin.emit(self)
        return True

    @property
    def training(self) -> bool:
        """True while this window's session trains (stopping it loses time, so ask)."""
        return self.state.phase == "training" and self.runner.running and \
            not self.runner.stopping

    def may_stop(self) -> bool:
        """Ask before stopping a training (unless turned off or already confirmed)."""
        if self.confirmed or self.question is None or not self.training:
            return True
        if self.state.role == "hub":
            ok = self.question.ask(self, "Stop training?", "Stop this training session? The "
                                   "model so far is saved and the session can be resumed "
                                   "later from the main window.", "Stop training")
        else:
            ok = self.question.ask(self, "Leave the session?", "Leave this training session? "
                                   + ("The other machines train on without this one."
                                      if self._others(self.state.worker_id) else
                                      "It is the only worker: training waits until another "
                                      "machine joins."), "Leave session")
        self.confirmed = self.confirmed or ok  # a signal may have confirmed it meanwhile
        return ok

    def stop_session(self) -> None:
        """Stop (hub) or leave (worker) once confirmed: returns at once, the thread winds
        down."""
        if not self.may_stop():
            return
        self.runner.stop()
        self.stop_button.setEnabled(False)
        self.stop_button.setText("Stopping…")

    def kick_selected(self) -> None:
        """Kick the worker selected in the table."""
        worker = self.workers_table.selected_worker()
        if worker is not None:
            self.kick(worker)

    def kick(self, worker_id: int) -> None:
        """Remove a worker and ban it for the session (a hub's window), once confirmed."""
        kick = getattr(self.runner, "kick", None)
        row = self.state.workers.get(worker_id)
        name = row.name if row is not None else f"worker {worker_id}"
        if kick is None:
            return
        remove, block = self.kick_question.ask(self, name, self._others(worker_id))
        if remove:
            kick(worker_id, block)
            self.kick_button.setEnabled(False)

    def _others(self, worker_id: int | None) -> int:
        """The workers in the session now besides ``worker_id`` (the host's own included)."""
        return sum(1 for key, w in self.state.workers.items()
                   if key != worker_id and w.state in ACTIVE_STATES)

    def new_pin(self) -> None:
        """Rotate the session PIN and show the new one."""
        rotate = getattr(self.runner, "rotate_pin", None)
        pin = rotate() if rotate is not None else None
        if pin is not None and self.pin_card is not None:
            self.pin_card.set_pin(pin)
            self.state.note("The PIN was replaced: the old one no longer pairs")

    def _update_kick(self) -> None:
        self.kick_button.setEnabled(self.state.active and
                                    self.workers_table.selected_worker() is not None)

    def output_url(self) -> QUrl:
        """The folder "Open output folder" opens (empty until the session finished)."""
        return self.finish_card.url

    def open_output_folder(self, url: QUrl) -> bool:
        """Show the output folder in the system's file manager; without one, show its path
        in a small dialog whose Copy button puts it on the clipboard (``folder_dialog``):
        nothing is copied, or said to be, before that button is pressed."""
        if QDesktopServices.openUrl(url):
            return True
        path = url.toLocalFile()
        self.state.note(f"No file manager could open the output folder. It is here: {path}")
        self.finish_card.model_path.setToolTip(path)
        self.folder_dialog = FolderDialog(path, self)
        self.folder_dialog.show()
        self.refresh()
        return False

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's API
        """Closing stops the session (once confirmed); the main window waits for the
        thread to end."""
        if not self.may_stop():
            event.ignore()
            return
        if self.runner.running:
            self.runner.stop()
        if self.state.role == "worker":  # its host stopped it: its window back goes on
            progress_worker.leave_behind(progress_worker.hub_of(
                getattr(self.runner, "target", None)), self.state)
        self.timer.stop()
        self.tap.detach()
        self.closed.emit(self)
        super().closeEvent(event)
