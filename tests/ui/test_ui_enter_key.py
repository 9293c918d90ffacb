"""Enter and Return press the focused button as Space does, in every window: a main window's
button (Enter did nothing there), a dialog's check box and checkable group box (Enter started
hosting instead), a progress window's Stop; each once, never twice. A dialog's default
button keeps Enter from a field, and its own buttons click once as before."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QAbstractButton, QApplication, QDialog, QWidget  # noqa: E402

from computeshare_desktop.gui.app import make_app  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.windows import busy_hub_window  # noqa: E402

KEYPAD = Qt.KeyboardModifier.KeypadModifier
ENTERS = ((Qt.Key.Key_Return, Qt.KeyboardModifier.NoModifier), (Qt.Key.Key_Enter, KEYPAD))


def focus(qtbot, widget: QWidget) -> None:
    """Give ``widget`` the keyboard's focus, its window active, as Tab would."""
    widget.window().activateWindow()
    qtbot.waitUntil(widget.window().isActiveWindow, timeout=5_000)
    widget.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(widget.hasFocus, timeout=2_000)


def clicks(button: QAbstractButton) -> list[int]:
    """The button's clicks from now on, a 1 each."""
    seen: list[int] = []
    button.clicked.connect(lambda *_: seen.append(1))
    return seen


def test_enter_and_return_press_the_main_windows_buttons_once(qtbot, main_window):
    make_app([])  # made again, as each window's test does: still one press per key
    main_window.timer.stop()
    button = main_window.host_button
    pressed = clicks(button)
    for times, (key, modifiers) in enumerate(ENTERS, 1):
        focus(qtbot, button)
        qtbot.keyClick(button, key, modifiers)
        dialog = main_window.host_dialog
        assert len(pressed) == times and dialog is not None, (key, pressed)
        qtbot.waitUntil(dialog.isVisible, timeout=2_000)
        dialog.reject()
        qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=2_000)  # noqa: B023

    box = main_window.paired.enabled_box  # a check box: Enter ticks it as Space does
    was = box.isChecked()
    for key, modifiers in ENTERS:
        focus(qtbot, box)
        qtbot.keyClick(box, key, modifiers)
        assert box.isChecked() != was, key
        was = box.isChecked()


@pytest.fixture
def host_dialog(qtbot, styled_app, tmp_path, monkeypatch) -> HostDialog:
    from computeshare_desktop.gui import host_dialog

    monkeypatch.setattr(host_dialog, "is_available", lambda name: name == "mnist-sample")
    dialog = HostDialog(HostOptions(out_dir=str(tmp_path / "run")))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    return dialog


def test_enter_ticks_the_host_dialogs_check_boxes_and_does_not_start(qtbot, host_dialog):
    dialog = host_dialog
    started = clicks(dialog.start_button)
    for box in (dialog.train_here, dialog.advanced):  # a check box, a checkable group box
        dialog.show_field(box)
        was = box.isChecked()
        for key, modifiers in ENTERS:
            focus(qtbot, box)
            qtbot.keyClick(box, key, modifiers)
            assert box.isChecked() != was, (box, key)
            was = box.isChecked()
    assert started == [] and dialog.isVisible() and dialog.result() == 0


def test_a_dialogs_buttons_and_its_default_keep_enter(qtbot, host_dialog):
    dialog = host_dialog
    dialog.show_field(dialog.name)
    started = clicks(dialog.start_button)
    for times, (key, modifiers) in enumerate(ENTERS, 1):  # a focused button: itself, once
        focus(qtbot, dialog.start_button)
        qtbot.keyClick(dialog.start_button, key, modifiers)
        assert len(started) == times and dialog.result() == QDialog.DialogCode.Accepted, key
        dialog.show()
    focus(qtbot, dialog.name)  # a field: the dialog's default button, Start hosting
    qtbot.keyClick(dialog.name, Qt.Key.Key_Return)
    assert len(started) == 3
    assert dialog.result() == QDialog.DialogCode.Accepted and not dialog.isVisible()


def test_enter_and_return_press_a_progress_windows_stop_once(qtbot, styled_app):
    window = busy_hub_window(qtbot)
    stop = window.stop_button
    pressed = clicks(stop)
    focus(qtbot, stop)
    qtbot.keyClick(stop, Qt.Key.Key_Return)
    assert pressed == [1] and window.runner.stopping  # the runner's stop ran
    close = window.close_button
    focus(qtbot, close)
    qtbot.keyClick(close, Qt.Key.Key_Enter, KEYPAD)
    assert not window.isVisible()
    assert QApplication.focusWidget() is not close
