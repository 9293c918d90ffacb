"""Helpers for the desktop-app tests: a scripted runner, typing into and clicking real widgets,
answering the app's questions, event-loop latency, images and what a widget looks like."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import (QAbstractSpinBox, QCheckBox, QLineEdit, QPushButton, QRadioButton,
                               QStyle, QStyleOptionButton, QTableView, QWidget)

LEFT = Qt.MouseButton.LeftButton


class Scripted(SimpleNamespace):
    """A progress window's runner whose events the test scripts (nothing runs): ``drain``
    hands over what ``script`` holds, once, or, where a test queued ``batches``, the next
    batch (one a refresh, as a session's thread hands them in turn); ``stop`` only marks it
    stopping, as a real runner's does until its thread ends."""

    def __init__(self, scope: str = "test-scope") -> None:
        super().__init__(running=True, stopping=False, scope=scope, script=[], batches=[])

    def drain(self) -> list:
        if self.batches:
            return self.batches.pop(0)
        events, self.script = self.script, []
        return events

    def stop(self) -> None:
        self.stopping = True

    def join(self, timeout_s: float) -> bool:
        return True


def reveal(widget: QWidget) -> None:
    """Show the step or tab that holds ``widget`` (a window with ``show_field``, such as the
    Host dialog's steps), as a person would pick it before typing or clicking there."""
    window = widget.window()
    show_field = getattr(window, "show_field", None)
    if show_field is not None and window.isVisible():
        show_field(widget)


def type_into(qtbot, widget: QWidget, text: str) -> None:
    """Replace a line edit's or spin box's text by typing, as a user would."""
    reveal(widget)
    widget.setFocus()
    if isinstance(widget, QAbstractSpinBox):
        widget.selectAll()
        qtbot.keyClick(widget, Qt.Key.Key_Backspace)
    elif isinstance(widget, QLineEdit):
        widget.selectAll()
        qtbot.keyClick(widget, Qt.Key.Key_Backspace)
    qtbot.keyClicks(widget, text)
    if isinstance(widget, QAbstractSpinBox):
        widget.interpretText()


def click(qtbot, widget: QWidget) -> None:
    """A real left click in the middle of ``widget``."""
    reveal(widget)
    assert widget.isVisible() and widget.isEnabled(), f"{widget!r} cannot be clicked"
    if isinstance(widget, (QCheckBox, QRadioButton)):
        # a check box reacts only on its indicator and text: a layout may stretch it wider,
        # and a click in the middle of the stretch does nothing, for a user as for a test
        was = widget.isChecked()
        qtbot.mouseClick(widget, LEFT, pos=check_point(widget))
        want = True if isinstance(widget, QRadioButton) else not was
        assert widget.isChecked() == want, f"{widget.text()!r} did not take the click"
        return
    qtbot.mouseClick(widget, LEFT)


def check_point(box: QCheckBox | QRadioButton) -> QPoint:
    """The middle of the part of a check box or radio button that takes clicks."""
    option = QStyleOptionButton()
    box.initStyleOption(option)
    element = (QStyle.SubElement.SE_CheckBoxClickRect if isinstance(box, QCheckBox)
               else QStyle.SubElement.SE_RadioButtonClickRect)
    return box.style().subElementRect(element, option, box).center()


def click_row(qtbot, view: QTableView, row: int, *, double: bool = False) -> None:
    """Click (or double-click) the first cell of ``row``."""
    rect = view.visualRect(view.model().index(row, 0))
    where: QPoint = rect.center()
    qtbot.mouseClick(view.viewport(), LEFT, pos=where)
    if double:  # a real double-click is press, release, then a double-click press
        qtbot.mouseDClick(view.viewport(), LEFT, pos=where)


class LoopLatency:
    """A 10 ms precise timer on the GUI thread; records how late each tick fires."""

    def __init__(self, interval_ms: int = 10) -> None:
        self.interval_s = interval_ms / 1000
        self.lateness: list[float] = []
        self._last: float | None = None
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)

    def start(self) -> None:
        self._last = time.perf_counter()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def _tick(self) -> None:
        now = time.perf_counter()
        if self._last is not None:
            self.lateness.append(max(0.0, now - self._last - self.interval_s))
        self._last = now

    def percentile(self, q: float) -> float:
        ordered = sorted(self.lateness)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def image_stats(path: Path) -> tuple[int, int, int]:
    """(width, height, distinct colours on a sampling grid) of a PNG."""
    image = QImage(str(path))
    assert not image.isNull(), f"{path} is not an image"
    colours = {image.pixel(x, y) for x in range(0, image.width(), 3)
               for y in range(0, image.height(), 3)}
    return image.width(), image.height(), len(colours)


def screenshot_dir(tmp_path: Path) -> Path:
    """Where screenshots go: $COMPUTESHARE_SCREENSHOTS (e.g. docs/screenshots) or tmp_path."""
    folder = Path(os.environ.get("COMPUTESHARE_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def connect_to(qtbot, main_window, port: int, pin: str):
    """Connect to 127.0.0.1:``port`` with ``pin`` through the dialog; the dialog, joining."""
    click(qtbot, main_window.connect_button)
    dialog = main_window.join_dialog
    qtbot.waitUntil(dialog.isVisible)
    type_into(qtbot, dialog.address_edit, f"127.0.0.1:{port}")
    type_into(qtbot, dialog.pin_edit, pin)
    click(qtbot, dialog.join_button)
    return dialog


def join_by_address(qtbot, main_window, port: int, pin: str):
    """Connect to 127.0.0.1:``port`` with ``pin`` through the dialog; the progress window."""
    connect_to(qtbot, main_window, port, pin)
    qtbot.waitUntil(lambda: len(main_window.progress_windows) == 1, timeout=20_000)
    return main_window.progress_windows[0]


def answer_box(question, button: str, *, never_again: bool = False,
               default: str | None = None) -> list[str]:
    """Answer ``question``'s next box with ``button``; the list gets the box's text. With
    ``default``, assert that it is the box's default and Escape button."""
    asked: list[str] = []

    def reply() -> None:
        box = question.box
        if box is None:
            QTimer.singleShot(20, reply)
            return
        asked.append(box.text())
        if default is not None:
            assert box.defaultButton().text() == box.escapeButton().text() == default
        if never_again:
            box.checkBox().setChecked(True)
        next(b for b in box.buttons() if b.text() == button).click()

    QTimer.singleShot(20, reply)
    return asked


def answer_kick(window, button: str, block: bool = False) -> list[str]:
    """Answer the next kick question of ``window`` with ``button`` (``block``: with "Block
    this machine" ticked); the list gets its text (and asserts that the default button
    keeps the worker)."""
    return answer_box(window.kick_question, button, default="Keep worker", never_again=block)


def fill(widget: QWidget) -> int:
    """The colour of most of a rendered widget's pixels (its background)."""
    image = widget.grab().toImage()
    counts = Counter(image.pixel(x, y) for x in range(0, image.width(), 2)
                     for y in range(0, image.height(), 2))
    return counts.most_common(1)[0][0]


def buttons_clipped(root: QWidget) -> list[str]:
    """The texts of the visible push buttons under ``root`` that are narrower than their
    label needs (Qt then elides it: "ownload."). Empty when every label shows whole."""
    return [b.text() for b in root.findChildren(QPushButton)
            if b.isVisibleTo(root) and b.width() < b.sizeHint().width()]


ACCENT = QColor("#4F46E5").rgb()  # the primary button's fill


def focus(qtbot, button: QPushButton) -> None:
    """Give ``button`` the keyboard's focus, and wait until it has it."""
    button.setFocus()
    qtbot.waitUntil(button.hasFocus, timeout=1000)
