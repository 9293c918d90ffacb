"""The app's style sheet as a person sees it: disabled and locked fields look greyed, every
kind of button shows a focus ring, and the accent marks a dialog's primary button (a
question's safe default among them), never the button that merely has the focus."""

from __future__ import annotations


import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QColor  # noqa: E402
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QHBoxLayout, QLineEdit,  # noqa: E402
                               QPushButton, QSpinBox, QWidget)

from helpers.ui import buttons_clipped, fill  # noqa: E402
from helpers.ui import ACCENT, focus  # noqa: E402
from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QDialog  # noqa: E402
from computeshare_desktop.events import CodeRefused  # noqa: E402
from computeshare_desktop.gui.code_dialog import DONT, CodeQuestion  # noqa: E402
from computeshare_desktop.gui.confirm import ModalQuestion  # noqa: E402

WHITE = QColor("#ffffff").rgb()


def test_disabled_fields_do_not_look_editable(qtbot, styled_app):
    for kind in (QLineEdit, QSpinBox, QDoubleSpinBox, QComboBox):
        on, off = kind(), kind()
        off.setEnabled(False)
        for field in (on, off):
            qtbot.addWidget(field)
            field.resize(160, 34)
            field.show()
        assert fill(on) == WHITE, kind.__name__
        assert fill(off) != WHITE, f"a disabled {kind.__name__} is as white as an editable one"


def test_the_host_dialogs_locked_fields_are_greyed(qtbot, styled_app):
    from computeshare_desktop.gui.host_dialog import HostDialog
    from computeshare_desktop.service.options import HostOptions

    dialog = HostDialog(HostOptions())
    qtbot.addWidget(dialog)
    dialog.show()
    widgets = {name: dialog.editors[name].widget
               for name in ("codec", "topk", "local_steps", "max_staleness")}
    assert not dialog.advanced.isChecked() and dialog.updates.currentData() != "async"
    for name, widget in widgets.items():  # Advanced off, synchronous rounds: all locked
        assert not widget.isEnabled(), name
        assert fill(widget) != WHITE, f"{name} looks editable while it is locked"
    dialog.advanced.setChecked(True)
    assert fill(widgets["codec"]) == WHITE


def focus_ring(qtbot, button: QPushButton, other: QPushButton) -> int:
    """How many pixels of ``button`` change when it takes the keyboard focus, as the window
    shows it (the window's own grab: a ring's gap shows what is behind the button)."""
    window = button.window()

    def look() -> list[int]:
        image = window.grab(button.geometry()).toImage()
        return [image.pixel(x, y) for x in range(image.width()) for y in range(image.height())]

    other.setFocus()
    qtbot.waitUntil(other.hasFocus, timeout=1000)
    before = look()
    button.setFocus()
    qtbot.waitUntil(button.hasFocus, timeout=1000)
    after = look()
    return sum(b != a for b, a in zip(before, after, strict=True))


def test_every_kind_of_button_shows_a_focus_ring(qtbot, styled_app):
    canvas = QWidget()
    canvas.setObjectName("Canvas")
    qtbot.addWidget(canvas)
    line = QHBoxLayout(canvas)
    plain, primary, danger, default, other = (QPushButton(t) for t in (
        "Cancel", "Start hosting", "Stop session", "Join", "Other"))
    primary.setObjectName("Primary")
    danger.setObjectName("Danger")
    default.setDefault(True)
    for button in (plain, primary, danger, default, other):
        line.addWidget(button)
    canvas.show()
    canvas.activateWindow()
    qtbot.waitExposed(canvas)
    for button in (plain, primary, danger, default):
        size = button.size()
        changed = focus_ring(qtbot, button, other)
        # a ring all round: at least the button's perimeter changes colour
        assert changed >= 2 * (size.width() + size.height()), button.text()
        assert button.size() == size and not buttons_clipped(canvas)  # the label stays put


def test_the_focused_button_of_a_dialog_does_not_take_the_accent(qtbot, styled_app):
    dialog = QDialog()
    qtbot.addWidget(dialog)
    line = QHBoxLayout(dialog)
    cancel, start = QPushButton("Cancel"), QPushButton("Start hosting")
    start.setObjectName("Primary")
    start.setDefault(True)
    line.addWidget(cancel)
    line.addWidget(start)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitExposed(dialog)
    focus(qtbot, cancel)  # a dialog's focused button becomes its default (autoDefault)
    assert cancel.isDefault()
    assert fill(cancel) != ACCENT and fill(start) == ACCENT


def test_a_questions_safe_default_keeps_the_accent_when_the_focus_moves(qtbot, styled_app):
    question = ModalQuestion()
    seen: dict[str, int] = {}

    def look() -> None:
        box = question.box
        assert box is not None
        buttons = {b.text(): b for b in box.buttons()}
        go, stay = buttons["Stop training"], buttons["Keep training"]
        seen["stay"] = fill(stay)
        focus(qtbot, go)  # focused, it becomes the box's default (autoDefault)
        seen["go"], seen["stay after"] = fill(go), fill(stay)
        stay.click()

    QTimer.singleShot(0, look)
    assert question.ask_box(None, "Stop training?", "Stop it?", "Stop training",
                            "Keep training") == (False, False)
    assert seen == {"stay": ACCENT, "go": seen["go"], "stay after": ACCENT}
    assert seen["go"] != ACCENT


def test_the_code_questions_safe_default_wears_the_accent(qtbot, styled_app):
    box = CodeQuestion().make_box(None, CodeRefused("branchy.py:Net", "ab" * 32, "k", "hub"))
    qtbot.addWidget(box)
    box.show()
    qtbot.waitExposed(box)
    primary = [b.text() for b in box.buttons() if fill(b) == ACCENT]
    assert primary == [DONT]
