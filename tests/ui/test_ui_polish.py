"""The app's finish (issue 20, item 3): disabled fields look disabled, every button shows a
focus ring, the workers table elides names with tool tips, an ended session offers no new
PIN, and an output folder no file manager opens is shown in a small dialog."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QColor, QGuiApplication  # noqa: E402
from PySide6.QtWidgets import (QComboBox, QDoubleSpinBox, QHBoxLayout, QLineEdit,  # noqa: E402
                               QPushButton, QSpinBox, QWidget)

from computeshare_desktop.events import Ended, Finished, Listening  # noqa: E402
from computeshare_desktop.gui.panels import FolderDialog  # noqa: E402
from computeshare_desktop.gui.pin_card import PinCard  # noqa: E402
from computeshare_desktop.gui.progress_rows import WorkerRow  # noqa: E402
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.service import Tagged  # noqa: E402
from computeshare_desktop.gui.workers_table import (COLUMNS, FLOOR, NAME_FLOOR,  # noqa: E402
                                                    WorkersTable, fit_columns)
from helpers.ui import buttons_clipped, fill  # noqa: E402

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


def test_fit_columns_gives_the_name_the_rest_or_its_fair_share():
    need, floor = [150, 80, 70, 60, 90, 130, 90, 70], [70, 70, 60, 55, 95, 70, 90, 60]
    assert fit_columns(need, floor, 900) == [310, 80, 70, 60, 90, 130, 90, 70]
    narrower = fit_columns(need, floor, 600)  # Busy, Last seen, then the rate hide
    assert narrower[3] == narrower[6] == 0 and narrower[0] >= 150 and sum(narrower) == 600
    tight = fit_columns(need, floor, 420)
    assert tight[0] >= min(150, NAME_FLOOR) and sum(tight) <= 420
    assert all(w == 0 or w >= min(need[i], floor[i]) for i, w in enumerate(tight) if i)
    tiny = fit_columns(need, floor, 200)
    assert tiny[0] >= FLOOR


def test_long_names_keep_their_room_and_tell_all_in_a_tool_tip(qtbot, styled_app):
    table = WorkersTable(kickable=True)
    qtbot.addWidget(table)
    rows = [WorkerRow(1, "vm · CPU (host)", "CPU", pushed=204, rejected=14, state="training",
                      share=32, busy=0.5, last_seen=0.0),
            WorkerRow(2, "a-laptop-with-a-very-long-host-name.local", "Apple MPS", pushed=190,
                      state="training", share=32, last_seen=0.0)]
    for width in (560, 700, 1000):
        table.resize(width, 200)
        table.show()
        table.show_rows(rows, 1.0)
        header = table.horizontalHeader()
        shown = [c for c in range(len(COLUMNS)) if not table.isColumnHidden(c)]
        assert sum(header.sectionSize(c) for c in shown) <= table.viewport().width()
        assert {0, 5, 7} <= set(shown)  # name, pushed and state always show
        metrics = table.fontMetrics()
        assert header.sectionSize(0) >= metrics.horizontalAdvance("vm · CPU (host)") + 12
        assert header.sectionSize(5) >= metrics.horizontalAdvance("204 · 14 refused") + 12
    long_name = table.item(1, 0)
    assert long_name.toolTip().splitlines()[0] == rows[1].name
    assert "Pushed: 190" in long_name.toolTip() and "Busy: —" in long_name.toolTip()
    assert table.item(0, 5).toolTip() == "204 · 14 refused"


def test_an_ended_session_offers_no_new_pin(qtbot, styled_app):
    card = PinCard("428913")
    qtbot.addWidget(card)
    card.show()
    assert card.new_button.isVisible()
    card.end()
    assert not card.new_button.isVisible() and not card.copy_button.isVisible()
    assert not card.digits.isEnabled()


def test_the_folder_dialog_shows_the_path_and_copies_it(qtbot, styled_app, tmp_path):
    QGuiApplication.clipboard().setText("something else")
    dialog = FolderDialog(str(tmp_path))
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.field.text() == str(tmp_path) and dialog.field.isReadOnly()
    dialog.copy_button.click()
    assert QGuiApplication.clipboard().text() == str(tmp_path)
    assert dialog.copy_button.text() == "Copied ✓"


def finished_window(qtbot, tmp_path) -> ProgressWindow:
    state = ProgressState("hub", total_rounds=3, expected_workers=1)
    state.apply([Tagged("hub", e) for e in (
        Listening("127.0.0.1", 7341, 7342, 7343, "ab" * 8, ("127.0.0.1",), str(tmp_path)),
        Finished(0.97, 0.1, 3, str(tmp_path / "trained_model.pth"), 1.0), Ended(result=True))])
    idle = SimpleNamespace(running=True, stopping=False, scope="polish-test",  # a runner
                           drain=list, stop=lambda: None, join=lambda timeout_s: True)
    window = ProgressWindow(idle, state, title="Hosting t", subtitle="s", pin="428913",
                            refresh_ms=10_000)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window


def test_a_finished_sessions_window_has_no_new_pin(qtbot, styled_app, tmp_path):
    window = finished_window(qtbot, tmp_path)
    assert window.pin_card is not None and window.pin_card.new_button.isVisible()
    window.refresh()
    assert not window.state.active
    assert not window.pin_card.new_button.isVisible()
    assert not window.pin_card.copy_button.isVisible()


def test_without_a_file_manager_the_folder_is_shown_with_a_copy_button(qtbot, styled_app,
                                                                       monkeypatch, tmp_path):
    from PySide6.QtGui import QDesktopServices

    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: False))
    window = finished_window(qtbot, tmp_path)
    window.refresh()
    assert window.finish_card.open_button.isEnabled()
    QGuiApplication.clipboard().setText("something else")
    window.finish_card.open_button.click()
    dialog = window.folder_dialog
    assert dialog is not None and dialog.isVisible() and not dialog.isModal()
    assert dialog.field.text() == str(tmp_path)
    QGuiApplication.clipboard().setText("something else")
    dialog.copy_button.click()
    assert QGuiApplication.clipboard().text() == str(tmp_path)
    dialog.close()
