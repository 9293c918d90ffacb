"""The layout holds: the round line stays on one line, loss axes keep plain labels, the
workers table shows rows at the minimum size, and an error grows the Join dialog instead
of squashing the PIN field."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.join_dialog import JoinDialog  # noqa: E402
from computeshare_desktop.gui.progress_window import MIN_TABLE_HEIGHT  # noqa: E402
from helpers.windows import window_with_rounds  # noqa: E402


@pytest.mark.parametrize("width", [900, 1120, 1800])
def test_the_round_line_stays_on_one_line(qtbot, width):
    window = window_with_rounds(qtbot, 1135, 0.5)
    window.resize(width, 900)
    window.refresh()
    qtbot.waitUntil(lambda: window.progress_label.text() == "Round 1,135 of 20,000")
    label = window.progress_label
    assert label.height() < 2 * label.fontMetrics().lineSpacing()
    assert label.width() >= label.fontMetrics().horizontalAdvance(label.text())


def test_tiny_losses_keep_a_plain_axis_label(qtbot):
    window = window_with_rounds(qtbot, 30, 2e-6)
    window.refresh()
    axis = window.charts.loss_plot.getPlotItem().getAxis("left")
    assert "x1e" not in axis.labelString() and "loss" in axis.labelString()


def test_at_the_minimum_size_the_table_shows_rows(qtbot):
    window = window_with_rounds(qtbot, 5, 0.5)
    window.resize(window.minimumSizeHint())
    window.refresh()
    qtbot.wait(50)
    table = window.workers_table
    assert table.height() >= MIN_TABLE_HEIGHT
    assert table.viewport().height() >= 2 * table.verticalHeader().defaultSectionSize()


def test_an_error_grows_the_join_dialog_and_leaves_the_pin_field_whole(qtbot):
    dialog = JoinDialog(None, lambda target, pin: None)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    pin_height, before = dialog.pin_edit.height(), dialog.height()
    dialog._show("The hub refused: " + "a long explanation of what went wrong " * 6, "error")
    qtbot.wait(50)
    assert dialog.pin_edit.height() >= pin_height
    assert dialog.height() > before
    assert dialog.message.height() >= 2 * dialog.message.fontMetrics().lineSpacing()


def test_open_folder_without_a_file_manager_says_where_it_is(qtbot, monkeypatch, tmp_path):
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QDesktopServices, QGuiApplication

    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: False))
    window = window_with_rounds(qtbot, 3, 0.5)
    QGuiApplication.clipboard().setText("something else")
    assert not window.open_output_folder(QUrl.fromLocalFile(str(tmp_path)))
    log = window.log_pane.toPlainText()
    assert str(tmp_path) in log and "clipboard" not in log  # nothing copied yet: not said
    assert QGuiApplication.clipboard().text() == "something else"
    window.folder_dialog.copy_button.click()  # the dialog's Copy copies, and says so
    assert QGuiApplication.clipboard().text() == str(tmp_path)
    assert window.folder_dialog.copy_button.text() == "Copied ✓"
