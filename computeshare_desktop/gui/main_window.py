"""The main window: sessions on the LAN, this machine's device, Host / Join / Connect.

It owns every runner the app starts (hubs and workers) until its thread has ended, so
closing the window stops them all, withdraws the hub's mDNS advert and joins every thread.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from typing import Union

from PySide6.QtCore import QByteArray, QEvent, QModelIndex, QObject, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QKeyEvent
from PySide6.QtWidgets import (QFrame, QHBoxLayout, QLabel, QMainWindow, QPushButton,
                               QStackedWidget, QVBoxLayout, QWidget)

from ..discovery import DiscoveredSession
from ..errors import ComputeShareError
from ..join_options import JoinOptions
from ..schema import defaults
from ..service import HostService, JoinService, Tagged, join_plan, remembers
from .assets import app_icon
from .host_dialog import HostDialog
from .join_dialog import JoinDialog
from .placement import available_geometry, fit, place
from ..service.options import (AppConfig, HostOptions, JoinTarget, default_output_folder,
                               host_plan, worker_name)
from .code_dialog import CodeQuestion
from .doctor_dialog import DoctorDialog
from .comeback import Comebacks, same_choices
from .confirm import StopQuestion
from .progress_window import ProgressWindow
from .paired_machines import PairedMachinesCard
from .recent_sessions import RecentSessions
from .session_table import SessionsView, SessionTableModel
from .settings import Settings
from .sources import DeviceProbe, DiscoveryFeed

log = logging.getLogger(__name__)

Runner = Union[HostService, JoinService]
POLL_MS = 250
SHUTDOWN_TIMEOUT_S = 15.0


class MainWindow(QMainWindow):
    """Lists sessions as they appear; hosts and joins them."""

    def __init__(self, settings: Settings, config: AppConfig | None = None) -> None:
        super().__init__()
        self.settings, self.config = settings, config or AppConfig()
        self.question = StopQuestion(settings)
        self.code_question = CodeQuestion()  # a hub offers code: run it? (default: no)
        self.setWindowTitle("ComputeShare")
        self.setWindowIcon(app_icon())
        self.runners: list[Runner] = []  # started and not yet ended
        self.progress_windows: list[ProgressWindow] = []
        self.host_dialog: HostDialog | None = None
        self.join_dialog: JoinDialog | None = None
        self.doctor_dialog: DoctorDialog | None = None
        self.model = SessionTableModel()
        self.comebacks = Comebacks(self._new_worker, self._open_worker)  # after a host's stop
        self._build()
        self.feed = DiscoveryFeed(self.config.interfaces).start()
        self.probe = DeviceProbe().start()
        self._show_discovery_status()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.poll)
        self.timer.start(POLL_MS)
        self._restore_geometry()

    # ----------------------------------------------------------------- layout
    def _build(self) -> None:
        icon = QLabel()
        icon.setPixmap(app_icon().pixmap(52, 52))
        title = QLabel("ComputeShare")
        title.setObjectName("Title")
        subtitle = QLabel("Pool the machines on your network to train one PyTorch model.")
        subtitle.setObjectName("Subtitle")
        self.device_label = QLabel("This machine: detecting its device…")
        self.device_label.setObjectName("StatusChip")
        self.sessions_view = SessionsView(self.model)
        self.sessions_view.doubleClicked.connect(self._double_clicked)
        self.sessions_view.installEventFilter(self)  # Enter on a row joins it
        self.sessions_view.selectionModel().selectionChanged.connect(self._update_buttons)
        self.empty_label = QLabel()
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self.empty_label.setProperty("role", "muted")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty_label)
        self.stack.addWidget(self.sessions_view)
        self.host_button = QPushButton("Host a session…")
        self.host_button.setObjectName("Primary")
        self.host_button.clicked.connect(self.open_host_dialog)
        self.join_button = QPushButton("Join")
        self.join_button.clicked.connect(self.join_selected)
        self.join_button.setEnabled(False)
        self.connect_button = QPushButton("Connect to address…")
        self.connect_button.clicked.connect(lambda: self.open_join_dialog(None))
        self.doctor_button = QPushButton("Check network…")
        self.doctor_button.setToolTip("Check this machine's network (and the link to the "
                                      "selected session's hub): what blocks, and the fix")
        self.doctor_button.clicked.connect(self.open_doctor_dialog)
        self.recent = RecentSessions()
        self.recent.resume_requested.connect(self.resume)
        self.recent.show_folders(self.settings.recent_sessions())
        self.paired = PairedMachinesCard()
        self.setCentralWidget(self._layout(icon, title, subtitle))
        self._tab_in_reading_order()
        self.resize(900, 640)

    def _tab_in_reading_order(self) -> None:
        """Tab goes as a person reads: the sessions, the buttons under them left to right,
        then the recent sessions card and the paired machines card beside it."""
        chain = (self.sessions_view, self.connect_button, self.doctor_button,
                 self.join_button, self.host_button, self.recent.table,
                 self.recent.resume_button, self.paired.list, self.paired.enabled_box,
                 self.paired.remove_button)
        for a, b in itertools.pairwise(chain):
            self.setTabOrder(a, b)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's API
        """Enter or Return on a selected session joins it."""
        if watched is self.sessions_view and event.type() == QEvent.Type.KeyPress and \
                isinstance(event, QKeyEvent) and \
                event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and \
                self.selected_session() is not None:
            self.join_selected()
            return True
        return super().eventFilter(watched, event)

    def _layout(self, icon: QLabel, title: QLabel, subtitle: QLabel) -> QWidget:
        titles = QVBoxLayout()
        titles.setSpacing(2)
        titles.addWidget(title)
        titles.addWidget(subtitle)
        head = QHBoxLayout()
        head.setSpacing(14)
        head.addWidget(icon)
        head.addLayout(titles, 1)
        head.addWidget(self.device_label, 0, Qt.AlignmentFlag.AlignVCenter)
        section = QLabel("Sessions on your network")
        section.setObjectName("SectionTitle")
        card = QFrame()
        card.setObjectName("Card")
        inner = QVBoxLayout(card)
        inner.setContentsMargins(14, 12, 14, 14)
        inner.addWidget(section)
        inner.addWidget(self.stack, 1)
        buttons = QHBoxLayout()  # in the card, under the list they act on: a smaller window
        buttons.addWidget(self.connect_button)
        buttons.addWidget(self.doctor_button)
        buttons.addStretch(1)
        buttons.addWidget(self.join_button)
        buttons.addWidget(self.host_button)
        inner.addLayout(buttons)
        body = QVBoxLayout()
        body.setContentsMargins(22, 14, 22, 14)
        body.setSpacing(14)
        body.addLayout(head)
        body.addWidget(card, 2)
        lists = QHBoxLayout()
        lists.addWidget(self.recent, 1)
        lists.addWidget(self.paired, 1)
        body.addLayout(lists, 1)
        canvas = QWidget()
        canvas.setObjectName("Canvas")
        canvas.setLayout(body)
        return canvas

    # ----------------------------------------------------------------- polling
    def poll(self) -> None:
        """Apply what the background sources found (GUI thread, on the timer)."""
        sessions = self.feed.take()
        if sessions is not None:
            self._show_sessions(sessions)
        self.comebacks.poll(sessions)
        if self.probe.done and self.device_label.property("probed") is None:
            self.device_label.setProperty("probed", True)
            text = self.probe.result.description if self.probe.result else "no usable device"
            self.device_label.setText(f"This machine: {text}")
            if self.probe.result is not None and self.probe.result.note:
                self.device_label.setToolTip(self.probe.result.note)
        running = [r for r in self.runners if r.running]
        if len(running) != len(self.runners):  # a session ended: its folder may resume now
            self.recent.show_folders(self.settings.recent_sessions())
        self.runners = running

    def _show_sessions(self, sessions: list[DiscoveredSession]) -> None:
        chosen = self.selected_session()
        self.model.set_sessions(sessions)
        if chosen is not None and (row := self.model.row_of(chosen.instance)) >= 0:
            self.sessions_view.selectRow(row)
        self.stack.setCurrentIndex(1 if sessions else 0)
        self._update_buttons()
        if not sessions:  # the centre says "Looking for sessions…": the bar says the same
            self._show_discovery_status()
            return
        count = f"{len(sessions)} session{'s' if len(sessions) != 1 else ''}"
        self.statusBar().showMessage(f"{count} found on {self._where()}")

    def _where(self) -> str:
        return ", ".join(self.config.interfaces) if self.config.interfaces else "your network"

    def _show_discovery_status(self) -> None:
        if self.feed.error:
            self.empty_label.setText(f"Sessions cannot be discovered here: {self.feed.error}\n"
                                     "Use Connect to address… instead.")
            self.statusBar().showMessage("LAN discovery unavailable")
        else:
            self.empty_label.setText("Looking for sessions…\n\nSessions hosted on this network "
                                     "appear here by themselves. Host one, or connect to a "
                                     "hub by its address.")
            self.statusBar().showMessage(f"Looking for sessions on {self._where()}")

    def selected_session(self) -> DiscoveredSession | None:
        """The session selected in the list, if any."""
        rows = self.sessions_view.selectionModel().selectedRows()
        return self.model.session(rows[0].row()) if rows else None

    def _update_buttons(self) -> None:
        """Join is enabled, and the primary button, while a session is selected."""
        selected = self.selected_session() is not None
        self.join_button.setEnabled(selected)
        for button, primary in ((self.join_button, selected), (self.host_button, not selected)):
            if (button.objectName() == "Primary") != primary:
                button.setObjectName("Primary" if primary else "")
                button.style().unpolish(button)
                button.style().polish(button)
                button.updateGeometry()  # the primary style is bold: wider text

    # ----------------------------------------------------------------- host
    def open_host_dialog(self) -> HostDialog:
        """Show the Host dialog (window-modal; returns at once)."""
        initial = dataclasses.replace(self.settings.host_options(),
                                      out_dir=default_output_folder(self.settings.output_parent()))
        dialog = HostDialog(initial, self)
        dialog.accepted.connect(lambda: self.host(dialog.options()))
        self.host_dialog = dialog
        dialog.open()
        return dialog

    def host(self, options: HostOptions) -> ProgressWindow | None:
        """Start a hub with ``options`` and open its progress window."""
        try:
            runner = HostService(host_plan(options, self.config, device=self.probe.result))
        except ComputeShareError as exc:
            self.statusBar().showMessage(f"Cannot host: {exc}")
            return None
        self.settings.remember_host(options)  # what started is what the dialog offers next
        self.settings.save()
        self.runners.append(runner.start())
        self.recent.show_folders(self.settings.recent_sessions())
        return self._open_progress(ProgressWindow.for_hub(runner, self.config.refresh_ms,
                                                          self.question))

    def resume(self, folder: str) -> ProgressWindow | None:
        """Resume the stopped session in ``folder`` (its own settings; a new PIN)."""
        try:
            options = HostOptions.resuming(folder)
        except ComputeShareError as exc:
            self.statusBar().showMessage(f"Cannot resume: {exc}")
            return None
        return self.host(options)

    # ----------------------------------------------------------------- join
    def join_selected(self) -> JoinDialog | None:
        """Join the selected session (asks for the PIN)."""
        session = self.selected_session()
        return self.open_join_dialog(JoinTarget.from_session(session)) if session else None

    def _double_clicked(self, index: QModelIndex) -> None:
        self.sessions_view.selectRow(index.row())
        self.join_selected()

    def open_doctor_dialog(self) -> DoctorDialog:
        """"Check network…": the doctor, against the selected session's hub if any."""
        session = self.selected_session()
        hub = f"{session.addresses[0]}:{session.advert.port}" if session else None
        if self.doctor_dialog is not None:
            self.doctor_dialog.close()
        self.doctor_dialog = DoctorDialog(self, hub=hub, interfaces=self.config.interfaces)
        self.doctor_dialog.show()
        self.doctor_dialog.start()
        return self.doctor_dialog

    def open_join_dialog(self, target: JoinTarget | None) -> JoinDialog:
        """Ask for the PIN (and the address when ``target`` is None), then pair."""
        dialog = JoinDialog(target, self._new_worker, self, refresh_ms=self.config.refresh_ms,
                            remembered=lambda t: remembers(t, worker_name()))
        dialog.accepted.connect(lambda: self._joined(dialog))
        self.join_dialog = dialog
        dialog.open()
        return dialog

    def _new_worker(self, target: JoinTarget, pin: str) -> JoinService:
        chosen = JoinOptions(**{**defaults(JoinOptions, "app"), "pin": pin})
        runner = JoinService(join_plan(target, chosen, device=self.probe.result))
        self.runners.append(runner)
        return runner

    def _joined(self, dialog: JoinDialog) -> None:
        if dialog.runner is not None:
            self._open_worker(dialog.runner, dialog.events)

    def _open_worker(self, runner: JoinService, events: list[Tagged]) -> ProgressWindow:
        window = ProgressWindow.for_worker(runner, events, self.config.refresh_ms,
                                           self.question, code_question=self.code_question)
        window.rejoin.connect(self._rejoin)
        self.comebacks.watch(window)
        return self._open_progress(window)

    def _rejoin(self, window: ProgressWindow) -> ProgressWindow | None:
        """Join the hub of ``window`` again (its person approved the code it offers): a new
        worker window replaces the old one (the hub's key is remembered: no PIN)."""
        old = window.runner
        if not isinstance(old, JoinService):
            return None
        runner = same_choices(old, self._new_worker(old.target, old.plan.options.pin)).start()
        window.confirmed = True
        window.close()
        return self._open_worker(runner, [])

    def _open_progress(self, window: ProgressWindow) -> ProgressWindow:
        window.closed.connect(self._progress_closed)
        self.progress_windows.append(window)
        place(window, self)  # inside this window's screen, whatever size it asks
        window.show()
        return window

    def _progress_closed(self, window: ProgressWindow) -> None:
        if window in self.progress_windows:
            self.progress_windows.remove(window)
        window.deleteLater()
        self.recent.show_folders(self.settings.recent_sessions())

    # ----------------------------------------------------------------- shutdown
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's API
        """Stop every session (once confirmed), withdraw adverts, join every thread,
        remember the geometry."""
        training = [w for w in self.progress_windows if w.training and not w.confirmed]
        if training:
            n = len(training)
            if not self.question.ask(self, "Quit ComputeShare?",
                                     f"{n} session{'s' if n > 1 else ''} still "
                                     f"train{'' if n > 1 else 's'} here. Quitting stops "
                                     f"{'them' if n > 1 else 'it'} (a hub saves its model "
                                     "and can be resumed later).", "Quit"):
                event.ignore()
                return
            for window in training:
                window.confirmed = True
        self.settings.remember_geometry(self.saveGeometry().toBase64().toStdString())
        self.settings.save()
        self.timer.stop()
        for window in list(self.progress_windows):
            window.close()
        self.shutdown()
        super().closeEvent(event)

    def close_without_asking(self) -> None:
        """Ctrl-C, SIGTERM (a logout) or Ctrl-Break: stop and save every session, no question.

        A question box on screen is dismissed first ("keep training"), so its caller returns;
        the close then runs from the event loop with every session already confirmed.
        """
        for window in self.progress_windows:
            window.confirmed = True
        if self.question.box is not None:
            self.question.box.reject()
        QTimer.singleShot(0, self.close)

    def shutdown(self) -> None:
        """Stop and join everything this window started (blocks up to a few seconds)."""
        for runner in self.runners:
            runner.stop()
        for runner in self.runners:
            if not runner.join(SHUTDOWN_TIMEOUT_S):
                log.warning("a session thread did not stop in %.0f s", SHUTDOWN_TIMEOUT_S)
        running = [r for r in self.runners if r.running]
        if len(running) != len(self.runners):  # a session ended: its folder may resume now
            self.recent.show_folders(self.settings.recent_sessions())
        self.runners = running
        self.feed.close()
        self.probe.join(SHUTDOWN_TIMEOUT_S)

    def _restore_geometry(self) -> None:
        saved = self.settings.geometry()
        if saved:
            self.restoreGeometry(QByteArray.fromBase64(saved.encode("ascii")))
            fit(self, available_geometry(self))  # a smaller screen than last time: inside
