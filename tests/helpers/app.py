"""The app as a person drives it: an instance with its own home, the Host dialog filled
in and started, a session picked and joined, a Join dialog whose runner never starts."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from computeshare_desktop.gui.host_dialog import CHECKING
from computeshare_desktop.gui.join_dialog import JoinDialog
from computeshare_desktop.gui.main_window import MainWindow
from computeshare_desktop.gui.settings import Settings
from computeshare_desktop.service import JoinService, JoinTarget
from helpers.host import HeldJoin, joining
from helpers.net import free_ports
from helpers.ui import click, click_row, type_into

NOWHERE = JoinTarget.from_address("127.0.0.1:9")  # nothing listens; nothing is started
SESSION = "Paired twice"  # the name host_session gives its sessions


def join_dialog(qtbot, started: list[JoinService]) -> JoinDialog:
    """A Join dialog for NOWHERE whose runner never starts (kept in ``started``)."""
    def runner(target: JoinTarget, pin: str) -> HeldJoin:
        started.append(HeldJoin(joining(target, pin=pin), []))
        return started[-1]  # type: ignore[return-value]

    dialog = JoinDialog(NOWHERE, runner, refresh_ms=10)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def shown(dialog: JoinDialog) -> dict[str, object]:
    """What the dialog's option fields show, by option name."""
    return {name: editor.value() for name, editor in dialog.choices.editors.items()}


def fill_host_dialog(qtbot, dialog, *, out, rounds, eval_every, workers=1, port=None) -> None:
    """Type the values of a short session into the real fields."""
    type_into(qtbot, dialog.rounds, str(rounds))
    type_into(qtbot, dialog.eval_every, str(eval_every))
    type_into(qtbot, dialog.workers, str(workers))
    type_into(qtbot, dialog.out_dir, str(out))
    type_into(qtbot, dialog.port, str(port or free_ports()))
    if not dialog.train_here.isChecked():
        click(qtbot, dialog.train_here)


def instance(qtbot, home, monkeypatch, app_config) -> MainWindow:
    """One instance of the app, shown, with ``home`` as its own COMPUTESHARE_HOME."""
    monkeypatch.setenv("COMPUTESHARE_HOME", str(home))
    settings = Settings()  # read now: this instance's own settings file
    settings.set_confirm_stop(False)
    window = MainWindow(settings, app_config)
    window.show()
    qtbot.waitExposed(window)
    return window


def host_session(qtbot, host_app: MainWindow, folder, rounds: int = 12):
    """Host a 1-worker session from the Host dialog (this machine does not train)."""
    click(qtbot, host_app.host_button)
    dialog = host_app.host_dialog
    qtbot.waitUntil(dialog.isVisible)
    type_into(qtbot, dialog.rounds, str(rounds))
    type_into(qtbot, dialog.eval_every, "0")
    type_into(qtbot, dialog.workers, "1")
    type_into(qtbot, dialog.name, SESSION)
    type_into(qtbot, dialog.port, str(free_ports()))
    type_into(qtbot, dialog.out_dir, str(folder))
    if dialog.train_here.isChecked():
        click(qtbot, dialog.train_here)
    click(qtbot, dialog.start_button)
    return host_app.progress_windows[-1]


def open_join(qtbot, worker_app: MainWindow, session_id: str):
    """Select the session (this session id: a new one each time) and click Join."""
    model = worker_app.model
    row = lambda: next((r for r in range(model.rowCount())  # noqa: E731
                        if model.session(r).advert.session_id == session_id), -1)
    qtbot.waitUntil(lambda: row() >= 0, timeout=30_000)
    click_row(qtbot, worker_app.sessions_view, row())
    click(qtbot, worker_app.join_button)
    join = worker_app.join_dialog
    qtbot.waitUntil(join.isVisible)
    return join


def start_with(qtbot, main_window, tmp_path, model: str):
    """The Host dialog filled for a short session of ``model`` on mnist-sample, then Start;
    returns the dialog once its checks have answered."""
    click(qtbot, main_window.host_button)
    dialog = main_window.host_dialog
    qtbot.waitUntil(dialog.isVisible)
    type_into(qtbot, dialog.out_dir, str(tmp_path / "run"))
    type_into(qtbot, dialog.port, str(free_ports()))
    type_into(qtbot, dialog.rounds, "2")
    dialog.model.setEditText(model)
    label = dialog.start_button.text()
    click(qtbot, dialog.start_button)
    # busy while the checks run, the window answering (this line runs: the loop is free)
    assert (dialog.start_button.text(), dialog.start_button.isEnabled()) == (CHECKING, False)
    assert QApplication.overrideCursor() is not None
    assert dialog.wait_checks(60)
    qtbot.waitUntil(lambda: dialog.start_button.text() == label, timeout=5_000)
    return dialog
