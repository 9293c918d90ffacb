"""Accessibility basics: every control has a name a screen reader can say, the PIN is read
digit by digit, and the app renders at 200% scaling (with a screenshot to prove it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtGui import QAccessible  # noqa: E402
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QAbstractSpinBox,  # noqa: E402
                               QComboBox, QHeaderView, QLineEdit, QPlainTextEdit, QWidget)

from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.gui.join_dialog import JoinDialog  # noqa: E402
from computeshare_desktop.gui.pin_card import PinCard  # noqa: E402
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.ui import Scripted, image_stats, screenshot_dir  # noqa: E402

CONTROLS = (QAbstractButton, QLineEdit, QAbstractSpinBox, QComboBox, QAbstractItemView,
            QPlainTextEdit)


def unnamed(top: QWidget) -> list[str]:
    """The visible controls of ``top`` that assistive technology cannot name."""
    missing = []
    for widget in top.findChildren(QWidget):
        if not isinstance(widget, CONTROLS) or not widget.isVisibleTo(top):
            continue
        if widget.objectName() == "qt_spinbox_lineedit" or isinstance(widget, QHeaderView):
            continue  # parts of a named spin box or table
        iface = QAccessible.queryAccessibleInterface(widget)
        if iface is None or not iface.text(QAccessible.Text.Name).strip():
            missing.append(f"{type(widget).__name__} {widget.objectName() or widget.toolTip()}")
    return missing


def test_every_control_has_an_accessible_name(qtbot, main_window, ui_home):
    host = HostDialog(HostOptions(out_dir=str(ui_home / "run")))
    join = JoinDialog(None, lambda target, pin: None)
    state = ProgressState("hub", total_rounds=100, expected_workers=2)
    progress = ProgressWindow(Scripted(), state, title="Hosting t", subtitle="s",
                              pin="428913")
    worker = ProgressWindow(Scripted(), ProgressState("worker"), title="Training", subtitle="s")
    for top in (host, join, progress, worker):
        qtbot.addWidget(top)
        top.show()
    for top in (main_window, host, join, progress, worker):
        assert unnamed(top) == [], type(top).__name__


def test_the_pin_is_read_digit_by_digit(qtbot):
    card = PinCard("428913")
    qtbot.addWidget(card)
    iface = QAccessible.queryAccessibleInterface(card.digits)
    assert iface.text(QAccessible.Text.Name) == "Session PIN"
    assert iface.text(QAccessible.Text.Description) == "4 2 8, 9 1 3"
    card.set_pin("1234")
    assert card.digits.accessibleDescription() == "1 2 3 4"


SCALED = """
import sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from computeshare_desktop.gui.app import make_app
from computeshare_desktop.gui.main_window import MainWindow
from computeshare_desktop.gui.settings import Settings
from computeshare_desktop.service.options import AppConfig
make_app([])
window = MainWindow(Settings(), AppConfig(interfaces=("127.0.0.1",), bind="127.0.0.1"))
window.resize(900, 600)
window.show()
app.processEvents()
hint = window.minimumSizeHint()
pixmap = window.grab()
assert pixmap.save(sys.argv[1]), "could not save"
print(pixmap.width(), pixmap.height(), hint.width(), hint.height(), pixmap.devicePixelRatio())
window.close()
"""


def test_the_app_renders_at_200_percent(tmp_path):
    path = screenshot_dir(tmp_path) / "main-window@2x.png"
    env = {**os.environ, "QT_SCALE_FACTOR": "2", "QT_QPA_PLATFORM": "offscreen",
           "COMPUTESHARE_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-c", SCALED, str(path)], capture_output=True,
                          text=True, env=env, timeout=120, cwd=Path(__file__).parents[2])
    assert proc.returncode == 0, proc.stderr
    width, height, hint_w, hint_h, ratio = proc.stdout.split()[-5:]
    assert float(ratio) == 2.0 and (int(width), int(height)) == (1800, 1200)
    assert int(hint_w) <= 1920 and int(hint_h) <= 1080  # fits a 4K screen at 200%
    assert image_stats(path)[2] >= 40  # drawn, not blank


def test_copy_pin_copies_and_says_so(qtbot):
    from PySide6.QtGui import QGuiApplication

    card = PinCard("428913")
    qtbot.addWidget(card)
    card.show()
    card.copy_button.click()
    assert QGuiApplication.clipboard().text() == "428913"
    assert card.copy_button.text() == "Copied ✓"
    qtbot.waitUntil(lambda: card.copy_button.text() == "Copy PIN", timeout=5_000)
