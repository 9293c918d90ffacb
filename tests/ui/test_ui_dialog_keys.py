"""The Host and Connect dialogs work without a mouse: they open from the keyboard, Tab walks
their fields in reading order (Ctrl+Tab the Host dialog's steps), Enter starts, Escape
cancels, and after a failure the focus is on the field to fix, its text selected so that
typing replaces it."""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QDialog, QGroupBox, QWidget  # noqa: E402

from helpers.net import PIN, RunningHub, free_ports  # noqa: E402


def focused() -> QWidget | None:
    return QApplication.focusWidget()


def press(qtbot, key: Qt.Key) -> None:
    """A key press where the focus is, as a keyboard would send it."""
    widget = focused()
    assert widget is not None
    qtbot.keyClick(widget, key)


def type_here(qtbot, text: str) -> None:
    widget = focused()
    assert widget is not None
    qtbot.keyClicks(widget, text)


def open_by_keyboard(qtbot, button) -> None:
    button.window().activateWindow()
    button.setFocus()
    qtbot.waitUntil(button.hasFocus, timeout=2_000)
    press(qtbot, Qt.Key.Key_Space)


def control(widget: QWidget) -> QWidget:
    """The control a focused widget belongs to (a spin box's focus is on its line edit)."""
    parent = widget.parentWidget()
    return parent if widget.objectName() == "qt_spinbox_lineedit" and parent else widget


def tab_walk(qtbot, dialog: QDialog, steps: int = 60) -> list[QWidget]:
    """The controls Tab reaches, from the focused one round the dialog's focus chain and
    back to it (where the focus then is)."""
    start = focused()
    assert start is not None
    seen = [control(start)]
    for _ in range(steps):
        press(qtbot, Qt.Key.Key_Tab)
        widget = focused()
        assert widget is not None and dialog.isAncestorOf(widget), widget
        if control(widget) is seen[0]:
            return seen
        seen.append(control(widget))
    raise AssertionError(f"Tab never came back to {seen[0]!r}")


def position(dialog: QDialog, widget: QWidget) -> tuple[int, int]:
    point = widget.mapTo(dialog, QPoint(0, 0))
    return point.y() + widget.height() // 2, point.x()


def in_reading_order(dialog: QDialog, widgets: list[QWidget]) -> bool:
    """Top to bottom, and left to right within a row, starting anywhere in the cycle."""
    places = [position(dialog, w) for w in widgets]
    start = places.index(min(places))
    cycle = places[start:] + places[:start]
    return all(a <= b or abs(a[0] - b[0]) < 8 and a[1] < b[1]
               for a, b in itertools.pairwise(cycle))


def box_of(dialog: QDialog, widget: QWidget) -> QWidget | None:
    """The outermost group box that holds ``widget`` (None: none, e.g. the buttons)."""
    found, parent = None, widget.parentWidget()
    while parent is not None and parent is not dialog:
        if isinstance(parent, QGroupBox):
            found = parent
        parent = parent.parentWidget()
    return found


def in_reading_order_by_box(dialog: QDialog, widgets: list[QWidget]) -> bool:
    """Each group box's fields in one run, in reading order (boxes sit in columns)."""
    runs: list[list[QWidget]] = []
    for widget in widgets:
        if runs and box_of(dialog, runs[-1][-1]) is box_of(dialog, widget):
            runs[-1].append(widget)
        else:
            runs.append([widget])
    boxes = [box_of(dialog, run[0]) for run in runs]
    whole = len(set(boxes)) == len(boxes) or (len(set(boxes)) == len(boxes) - 1
                                              and boxes[0] is boxes[-1])  # the cycle's seam
    return whole and all(in_reading_order(dialog, run) or len(run) == 1 for run in runs)


def test_the_host_dialog_by_keyboard(qtbot, main_window):
    open_by_keyboard(qtbot, main_window.host_button)
    dialog = main_window.host_dialog
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=2_000)
    qtbot.waitUntil(lambda: focused() is not None and dialog.isAncestorOf(focused()),
                    timeout=2_000)

    walked: list[QWidget] = []
    for step in range(dialog.steps.count()):  # Ctrl+Tab: the next step
        if step:
            qtbot.keyClick(focused(), Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
            qtbot.waitUntil(lambda: dialog.steps.currentIndex() == step  # noqa: B023
                            and dialog.isAncestorOf(focused()), timeout=2_000)
        here = tab_walk(qtbot, dialog)
        assert in_reading_order_by_box(dialog, here), [w.accessibleName() or w for w in here]
        walked += here
    fields = [dialog.dataset, dialog.model, dialog.rounds, dialog.batch_size, dialog.lr,
              dialog.eval_every, dialog.updates, dialog.aggregation, dialog.workers,
              dialog.train_here, dialog.out_dir, dialog.browse, dialog.preset, dialog.advanced,
              dialog.name, dialog.port, dialog.cancel_button, dialog.start_button]
    if dialog.advanced.isChecked():  # its fields are disabled (skipped) while it is not
        fields += [dialog.codec, dialog.local_steps]
    missing = [f for f in fields if f not in walked]
    assert not missing, missing  # every enabled control is reachable...
    assert not dialog.max_staleness.isEnabled() and dialog.max_staleness not in walked

    press(qtbot, Qt.Key.Key_Escape)  # ...and Escape cancels
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=2_000)
    assert main_window.progress_windows == []

    open_by_keyboard(qtbot, main_window.host_button)
    dialog = main_window.host_dialog
    qtbot.waitUntil(dialog.isVisible, timeout=2_000)
    dialog.show_field(dialog.rounds)
    dialog.rounds.setFocus()
    qtbot.waitUntil(lambda: dialog.isAncestorOf(focused()), timeout=2_000)
    press(qtbot, Qt.Key.Key_Up)  # arrows change a spin box's value
    press(qtbot, Qt.Key.Key_Return)  # Enter in a field is "Start hosting"
    qtbot.waitUntil(lambda: len(main_window.progress_windows) == 1, timeout=10_000)
    assert not dialog.isVisible()
    window = main_window.progress_windows[0]
    assert window.state.total_rounds == dialog.options().rounds


@pytest.mark.slow
def test_the_connect_dialog_by_keyboard(qtbot, main_window, tmp_path):
    open_by_keyboard(qtbot, main_window.connect_button)
    dialog = main_window.join_dialog
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=2_000)
    qtbot.waitUntil(lambda: focused() is dialog.address_edit, timeout=2_000)
    walked = tab_walk(qtbot, dialog)
    assert walked == [dialog.address_edit, dialog.pin_edit,
                      *(editor.widget for editor in dialog.choices.editors.values()),
                      dialog.cancel_button, dialog.join_button]

    closed = free_ports()  # nothing listens there
    type_here(qtbot, f"127.0.0.1:{closed}")
    press(qtbot, Qt.Key.Key_Tab)
    type_here(qtbot, PIN)
    press(qtbot, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: dialog.join_button.isEnabled() and dialog.message.isVisible()
                    and dialog.runner is None, timeout=5_000)
    assert "refused" in dialog.message.text(), dialog.message.text()
    # the address is what to fix: the focus is there, its text selected
    assert focused() is dialog.address_edit
    assert dialog.address_edit.selectedText() == f"127.0.0.1:{closed}"

    hub = RunningHub(tmp_path / "hub", workers=1, rounds=2000, eval_every=0)
    try:
        type_here(qtbot, f"127.0.0.1:{hub.port}")  # replaces the selected address
        press(qtbot, Qt.Key.Key_Return)  # the PIN typed before is still there
        qtbot.waitUntil(lambda: len(main_window.progress_windows) == 1, timeout=20_000)
        assert dialog.result() == QDialog.DialogCode.Accepted
    finally:
        main_window.close()
        hub.close()
