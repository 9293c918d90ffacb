"""Issue 20's trial, what it saw (findings 5, 15, 18 and POLISH's note): the accent marks the
primary button only, never the focused one; the output-folder dialog has one primary button
and a plain Close; a long worker name elides instead of hiding columns; a finished hub
window still fits a 1280×720 screen with its Close button in view."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import QPoint, QRect, QTimer  # noqa: E402
from PySide6.QtGui import QColor  # noqa: E402
from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton  # noqa: E402

from computeshare_desktop.events import CodeRefused, Ended, Finished, Listening  # noqa: E402
from computeshare_desktop.gui import placement, progress_window  # noqa: E402
from computeshare_desktop.gui.code_dialog import DONT, CodeQuestion  # noqa: E402
from computeshare_desktop.gui.confirm import ModalQuestion  # noqa: E402
from computeshare_desktop.gui.panels import FolderDialog  # noqa: E402
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from computeshare_desktop.gui.progress_rows import WorkerRow  # noqa: E402
from computeshare_desktop.gui.workers_table import (NAME_ELIDE, NAME_MOST,  # noqa: E402
                                                    WorkersTable, fit_columns)
from computeshare_desktop.service import Tagged  # noqa: E402
from helpers.ui import fill  # noqa: E402

ACCENT = QColor("#4F46E5").rgb()  # the primary button's fill


def focus(qtbot, button: QPushButton) -> None:
    button.setFocus()
    qtbot.waitUntil(button.hasFocus, timeout=1000)


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


def test_the_folder_dialog_has_one_primary_button_and_a_plain_close(qtbot, styled_app,
                                                                      tmp_path):
    dialog = FolderDialog(str(tmp_path))  # deletes itself on closing
    dialog.show()
    dialog.activateWindow()
    qtbot.waitExposed(dialog)
    buttons = dialog.findChildren(QPushButton)
    assert [b.text() for b in buttons if b.objectName() == "Primary"] == ["Copy"]
    close = dialog.close_button
    assert close.text() == "Close" and close.icon().isNull()  # no glyph over its word
    for button in (close, dialog.copy_button, close):  # whichever has the focus
        focus(qtbot, button)
        assert fill(close) != ACCENT and fill(dialog.copy_button) == ACCENT
    close.click()
    assert not dialog.isVisible()


# what the trial's table needed (a 1,120 px hub window): a 379 px name, then the rest
NEED = [379, 100, 85, 57, 95, 74, 91, 69]
FLOOR = [74, 70, 63, 57, 95, 74, 91, 60]
LONG = "a-very-long-worker-name-for-elision-test-machine · CPU"


def test_a_long_name_elides_before_any_column_hides():
    others = sum(NEED[1:])
    wide = fit_columns(NEED, FLOOR, others + NAME_MOST)
    assert all(wide) and wide[0] == NAME_MOST and sum(wide) == others + NAME_MOST
    enough = fit_columns(NEED, FLOOR, others + NAME_ELIDE)  # the name elides, all show
    assert all(enough) and enough[0] == NAME_ELIDE and enough[1:] == NEED[1:]
    trial = fit_columns(NEED, FLOOR, 682)  # the trial's table: only Busy gives way
    assert [c for c, w in enumerate(trial) if not w] == [3] and sum(trial) == 682
    assert trial[0] >= NAME_ELIDE
    short = [150, *NEED[1:]]  # a short name still never elides before columns hide
    assert fit_columns(short, FLOOR, others + 140)[0] >= 150


def test_the_tables_long_name_elides_with_its_whole_text_in_the_tip(qtbot, styled_app):
    table = WorkersTable(kickable=True)
    qtbot.addWidget(table)
    table.resize(900, 160)
    table.show()
    table.show_rows([WorkerRow(1, LONG, "CPU, 2 cores", pushed=21, state="training",
                               share=32, busy=0.98, last_seen=0.0)], 2.0)
    assert not any(table.isColumnHidden(c) for c in range(table.columnCount()))
    width = table.horizontalHeader().sectionSize(0)
    assert width < table.sizeHintForColumn(0)  # elided, not given the whole width
    assert table.item(0, 0).toolTip().splitlines()[0] == LONG


AREA = QRect(0, 0, 1280, 720 - 48)  # a 1280×720 screen less a task bar


@pytest.mark.parametrize("role", ["hub", "worker"])
def test_a_finished_window_still_fits_a_1280_by_720_screen(qtbot, styled_app, monkeypatch,
                                                             tmp_path, role):
    monkeypatch.setattr(progress_window, "available_geometry", lambda anchor=None: AREA)
    state = ProgressState(role, total_rounds=30, expected_workers=1)
    idle = SimpleNamespace(running=True, stopping=False, scope="fix-visual-test",  # a runner
                           drain=list, stop=lambda: None, join=lambda timeout_s: True)
    window = ProgressWindow(idle, state, title="Hosting TB one", refresh_ms=10_000,
                            subtitle="simplenet on mnist-sample · 1 worker(s) · 30 rounds",
                            pin="152649" if role == "hub" else None)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.resize(window.minimumSizeHint())  # as small as it goes, in the screen's corner
    placement.fit(window, AREA, near=QPoint(AREA.right(), AREA.bottom()))  # its corner
    qtbot.wait(10)
    state.apply([Tagged("hub", e) for e in (
        Listening("127.0.0.1", 7341, 7342, 7343, "ab" * 8, ("127.0.0.1",), str(tmp_path)),
        Finished(0.447, 2.06, 30, str(tmp_path / "trained_model.pth"), 1.1),
        Ended(result=True))])
    window.refresh()
    qtbot.waitUntil(window.finish_card.isVisible, timeout=1000)
    qtbot.wait(50)  # the layout settles, the window refits
    extra = placement.frame_extra(window)
    outer = QRect(window.frameGeometry().topLeft(), window.size() + extra)  # with a frame
    assert AREA.contains(outer), (outer, window.minimumSizeHint())
    close = window.close_button
    at = QRect(close.mapToGlobal(QPoint(0, 0)), close.size())
    assert close.isVisible() and AREA.contains(at), at
    card = window.finish_card
    assert AREA.contains(QRect(card.mapToGlobal(QPoint(0, 0)), card.size()))


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


def test_a_workers_window_needs_at_most_1024_px(qtbot, styled_app):
    idle = SimpleNamespace(running=True, stopping=False, scope="fix-visual-test",  # a runner
                           drain=list, stop=lambda: None, join=lambda timeout_s: True)
    window = ProgressWindow(idle, ProgressState("worker", name="vm"), refresh_ms=10_000,
                            title="Training for Elide", subtitle="Worker vm · hub 10.0.0.2:7341")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert len(window.cards) == 8  # a worker's: its compute time and its gradients too
    assert window.minimumSizeHint().width() <= 1024
