"""Every window fits a 1280×720 screen at 100 % and a 1920×1080 screen at 150 % (both a
1280×720 logical area): the Host dialog's size hint fits with a task bar and a title bar,
Start and each step's error are in view, the main and progress windows need no more than
1,024 px, and windows open inside the available area of the main window's screen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QPoint, QRect, QSize, Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QDialog, QWidget  # noqa: E402

from computeshare_desktop.errors import DatasetUnavailableError  # noqa: E402
from computeshare_desktop.gui import host_dialog, placement  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.windows import window_with_rounds  # noqa: E402
from helpers.ui import Scripted, click  # noqa: E402
from helpers.screens import LOGICAL, TASK_BAR, fits, frame, open_dialog, settle  # noqa: E402

MOST_WIDTH = 1024  # the main and progress windows' minimum width, at most


@pytest.fixture(autouse=True)
def styled(styled_app):
    """The app's own style sheet, as a person sees the dialog (its fonts make the dialog and
    a message row larger than Qt's plain style: a message below the fold hid there)."""
    return styled_app


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "datasets"))


def on_view(dialog: HostDialog, widget: QWidget) -> bool:
    """``widget`` is shown, inside the dialog and inside its step's visible part."""
    if not widget.isVisible():
        return False
    rect = QRect(widget.mapTo(dialog, QPoint(0, 0)), widget.size())
    step = dialog.steps.step_of_widget(widget)
    if step is not None:
        viewport = dialog.steps.scrolls[step].viewport()
        if not QRect(viewport.mapTo(dialog, QPoint(0, 0)), viewport.size()).contains(rect):
            return False
    return dialog.rect().contains(rect)


def test_the_host_dialog_fits_a_1280_by_720_screen(qtbot, tmp_path, monkeypatch, empty_cache):
    dialog = open_dialog(qtbot, tmp_path, monkeypatch)
    assert fits(dialog.sizeHint()) and fits(dialog.minimumSizeHint()), dialog.sizeHint()
    assert fits(dialog.size())
    for step in range(dialog.steps.count()):  # each step fits without scrolling
        dialog.steps.setCurrentIndex(step)
        settle(qtbot)
        assert on_view(dialog, dialog.start_button) and on_view(dialog, dialog.cancel_button)
        scroll = dialog.steps.currentWidget()
        assert not scroll.verticalScrollBar().isVisible(), dialog.steps.tabText(step)
    dialog.data_panel.show()  # the data panel has its room: the dialog is no wider for it
    settle(qtbot)
    dialog.steps.setCurrentIndex(0)
    assert fits(dialog.sizeHint()) and on_view(dialog, dialog.data_panel.heading)


def test_each_steps_error_shows_beside_its_field_in_view(qtbot, tmp_path, monkeypatch,
                                                        empty_cache):
    dialog = open_dialog(qtbot, tmp_path, monkeypatch)
    steps = dialog.steps

    steps.setCurrentIndex(2)  # on the last step, a field of the first is wrong
    dialog.dataset.setCurrentIndex(dialog.dataset.findData("cifar10"))
    click(qtbot, dialog.start_button)
    settle(qtbot)
    assert dialog.isVisible() and steps.current_step() == "what"
    assert dialog.error is dialog.messages["dataset"] and on_view(dialog, dialog.error)
    assert "cifar10 is not on this computer" in dialog.error.text()
    assert on_view(dialog, dialog.download_button) and dialog.download_button.hasFocus()

    dialog.dataset.setCurrentIndex(dialog.dataset.findData("mnist-sample"))
    dialog.rounds.setValue(300)
    dialog.warmup.setValue(300)  # a rule across two options names the one to fix
    click(qtbot, dialog.start_button)
    settle(qtbot)
    assert steps.current_step() == "how" and dialog.error is dialog.messages["warmup"]
    assert "warm-up must be shorter" in dialog.error.text() and on_view(dialog, dialog.error)
    assert not dialog.messages["dataset"].isVisible()  # one message at a time

    dialog.warmup.setValue(0)
    steps.setCurrentIndex(0)
    dialog.out_dir.setText("")
    click(qtbot, dialog.start_button)
    settle(qtbot)
    assert steps.current_step() == "who" and dialog.error is dialog.messages["out_dir"]
    assert "output folder" in dialog.error.text() and on_view(dialog, dialog.error)

    dialog._say("A message about no field in particular")  # beside the buttons
    settle(qtbot)
    assert dialog.error is dialog.message and on_view(dialog, dialog.message)
    assert on_view(dialog, dialog.start_button)
    assert fits(dialog.size())


def test_download_needed_and_enter_says_so_and_a_failed_download_says_what_to_pick(
        qtbot, tmp_path, monkeypatch, empty_cache):
    asked: list[str] = []

    def offline(name, progress):
        asked.append(name)
        raise DatasetUnavailableError(f"dataset {name!r} is not in /x and could not be "
                                      "downloaded (offline?): ... or use --dataset "
                                      "mnist-sample")

    dialog = open_dialog(qtbot, tmp_path, monkeypatch, downloader=offline)
    combo = dialog.dataset
    combo.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() in (combo, combo.lineEdit()))
    combo.setCurrentIndex(combo.findData("cifar10"))
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)  # Enter: Start hosting
    settle(qtbot)
    assert dialog.result() != QDialog.DialogCode.Accepted and dialog.isVisible()
    assert on_view(dialog, dialog.error) and "click Download" in dialog.error.text()
    assert QApplication.focusWidget() is dialog.download_button
    qtbot.keyClick(dialog.download_button, Qt.Key.Key_Space)  # the next key downloads
    qtbot.waitUntil(lambda: asked == ["cifar10"] and "Could not download" in
                    dialog.error.text(), timeout=5_000)
    settle(qtbot)
    text = dialog.error.text()
    assert "--" not in text and "mnist-sample" in text and "Download…" in text, text
    assert dialog.error is dialog.messages["dataset"] and on_view(dialog, dialog.error)


def test_a_new_option_gets_a_place_on_a_step(qtbot, tmp_path, monkeypatch):
    from computeshare_desktop import schema
    from computeshare_desktop.gui import host_steps
    from computeshare_desktop.gui.fields import Editor

    assert host_steps.step_of("model", schema.spec(HostOptions, "model")) == host_steps.WHAT
    assert host_steps.step_of("out_dir", schema.spec(HostOptions, "out_dir")) == host_steps.WHO
    real = host_dialog.editors

    def with_new_options(cls, initial):  # tomorrow's options: one of a new group
        found = real(cls, initial)
        found["tomorrow"] = Editor(schema.Option("new", label="A new option",
                                                 group="tomorrow"), bool, True)
        found["later"] = Editor(schema.Option("new", label="Another new option",
                                              group=schema.WORKERS), str, "")
        return found

    monkeypatch.setattr(host_dialog, "editors", with_new_options)
    dialog = open_dialog(qtbot, tmp_path, monkeypatch)
    placed = {name: dialog.steps.step_of_widget(editor.widget)
              for name, editor in dialog.editors.items()}
    assert None not in placed.values(), placed  # every field is on a step
    assert placed["rounds"] == placed["optimizer"] == "how" and placed["workers"] == "who"
    assert placed["tomorrow"] == host_steps.DEFAULT_STEP and placed["later"] == "who"
    for name in ("tomorrow", "later"):
        dialog.show_field(dialog.editors[name].widget)
        settle(qtbot)
        assert on_view(dialog, dialog.editors[name].widget)
        dialog._say("about the new option", name)
        settle(qtbot)
        assert dialog.error is dialog.messages[name] and on_view(dialog, dialog.error)
    assert fits(dialog.sizeHint())


def test_main_and_progress_windows_need_at_most_1024_px(qtbot, main_window):
    assert main_window.minimumSizeHint().width() <= MOST_WIDTH
    hub = ProgressWindow(Scripted(), main_window_state(), title="Hosting t", subtitle="s",
                         pin="428913")
    qtbot.addWidget(hub)
    worker = window_with_rounds(qtbot, 3, 0.5)
    for window in (hub, worker):
        hint = window.minimumSizeHint().expandedTo(window.minimumSize())
        assert hint.width() <= MOST_WIDTH and fits(hint), hint


def main_window_state():
    from computeshare_desktop.gui.progress_state import ProgressState

    return ProgressState("hub", total_rounds=100, expected_workers=2)


def test_windows_open_inside_the_main_windows_screen(qtbot, main_window, monkeypatch):
    small = QRect(100, 50, 1024, 700)  # a small screen's available area, off the origin
    monkeypatch.setattr(placement, "available_geometry", lambda anchor=None: small)
    main_window.move(900, 600)  # near that screen's far corner
    window = window_with_rounds(qtbot, 3, 0.5)
    window.hide()
    window.resize(1252, 860)  # as large as a person's window was seen
    main_window._open_progress(window)
    qtbot.waitExposed(window)
    inner = window.geometry()
    outer = QRect(window.frameGeometry().topLeft(), frame(inner.size()))
    assert small.contains(outer) and small.contains(inner), (inner, small)
    assert window.width() >= window.minimumSizeHint().width()

    away = QRect(-3000, 2000, 900, 600)  # a window restored from a screen no longer there
    main_window.setGeometry(away)
    placement.fit(main_window, small)
    assert small.contains(main_window.frameGeometry())


SCREEN = """
import json, sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from computeshare_desktop.gui.app import make_app
from computeshare_desktop.gui.host_dialog import HostDialog
from computeshare_desktop.service.options import HostOptions
make_app([])
dialog = HostDialog(HostOptions())  # no output folder: Start says so, on the last step
dialog.show()
app.processEvents()
dialog.accept()
app.processEvents()
screen = app.primaryScreen()
error, start = dialog.error, dialog.start_button
at = error.mapTo(dialog, error.rect().topLeft())
start_at = start.mapTo(dialog, start.rect().topLeft())
print(json.dumps({"area": screen.availableGeometry().getRect(), "ratio": screen.devicePixelRatio(),
                  "hint": [dialog.sizeHint().width(), dialog.sizeHint().height()],
                  "size": [dialog.width(), dialog.height()],
                  "error": [at.x(), at.y(), error.width(), error.height(), error.isVisible()],
                  "start": [start_at.x(), start_at.y(), start.width(), start.height()]}))
"""


@pytest.mark.slow  # a fresh process imports torch: about 6 s
def test_a_1920_by_1080_screen_at_150_percent(tmp_path):
    """The dialog on a 1920×1080 screen at 150 % (Qt's own scaling of a configured screen
    of the offscreen platform): 1280×720 logical pixels, and the dialog fits them."""
    config = tmp_path / "screen.json"
    config.write_text(json.dumps({"screens": [{
        "name": "laptop", "x": 0, "y": 0, "width": 1920, "height": 1080, "logicalDpi": 96,
        "logicalBaseDpi": 96, "dpr": 1}]}), encoding="utf-8")
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}",
           "QT_SCALE_FACTOR": "1.5", "COMPUTESHARE_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-c", SCREEN], env=env, text=True,
                          capture_output=True, timeout=120, cwd=Path(__file__).parents[2])
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    area = QRect(*seen["area"])
    assert area.size() == LOGICAL.size() and seen["ratio"] == 1.5, seen
    room = area.adjusted(0, 0, 0, -TASK_BAR)
    assert fits(QSize(*seen["hint"]), room) and fits(QSize(*seen["size"]), room), seen
    inside = QRect(0, 0, *seen["size"])
    x, y, w, h, shown = seen["error"]
    assert shown and inside.contains(QRect(x, y, w, h)), seen
    assert inside.contains(QRect(*seen["start"])), seen
