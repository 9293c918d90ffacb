"""A 1280×720 screen (1280×720 at 100 %, 1920×1080 at 150 %: the same logical area) with a
task bar, and whether a window's size fits it with its title bar and borders."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize

from computeshare_desktop.gui import host_dialog
from computeshare_desktop.gui.host_dialog import HostDialog
from computeshare_desktop.service.options import HostOptions


LOGICAL = QRect(0, 0, 1280, 720)  # 1280×720 at 100 %, 1920×1080 at 150 %
TASK_BAR, TITLE_BAR, BORDER = 48, 32, 4
AREA = LOGICAL.adjusted(0, 0, 0, -TASK_BAR)  # the available geometry, a task bar below


def frame(size: QSize) -> QSize:
    """The window's outer size with a title bar and borders."""
    return QSize(size.width() + 2 * BORDER, size.height() + TITLE_BAR + BORDER)


def fits(size: QSize, area: QRect = AREA) -> bool:
    """A window of ``size`` fits ``area`` with its title bar and borders."""
    outer = frame(size)
    return outer.width() <= area.width() and outer.height() <= area.height()


def open_dialog(qtbot, tmp_path, monkeypatch, **kwargs) -> HostDialog:
    """A Host dialog sized for a 1280×720 screen (its available area: AREA), shown."""
    monkeypatch.setattr(host_dialog, "available_geometry", lambda anchor=None: AREA)
    monkeypatch.setattr(host_dialog, "is_available", lambda name: name == "mnist-sample")
    dialog = HostDialog(HostOptions(out_dir=str(tmp_path / "run")), **kwargs)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.activateWindow()  # the keyboard's window, as a dialog just opened is (under Xvfb
    qtbot.waitUntil(dialog.isActiveWindow, timeout=5_000)  # a shown window may not be)
    return dialog


def settle(qtbot) -> None:
    """Let the layout place what just changed (a new message row)."""
    qtbot.wait(30)  # the layout places the new message row
