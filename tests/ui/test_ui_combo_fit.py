"""A closed drop-down shows its choice whole: in the Host and Join dialogs, sized for a
1280×720 screen, every item of every combo box fits the box's text area (no "Synchronous
rounds (every worker, every" cut at the box's edge), and the dialogs still fit the screen."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtWidgets import (QComboBox, QStyle, QStyleOptionComboBox,  # noqa: E402
                               QWidget)

from computeshare_desktop.gui.join_dialog import JoinDialog  # noqa: E402
from computeshare_desktop.service import JoinTarget  # noqa: E402
from helpers.screens import fits, open_dialog, settle  # noqa: E402

LINE_EDIT_MARGIN = 2  # QLineEdit's own room left and right of its text (qlineedit_p.h)


def text_room(combo: QComboBox) -> int:
    """The width the closed box draws its text in: the style's edit field, or for an
    editable box its line edit less the line edit's margins."""
    line = combo.lineEdit()
    if line is not None:
        margins = line.textMargins()
        return (line.contentsRect().width() - margins.left() - margins.right()
                - 2 * LINE_EDIT_MARGIN)
    option = QStyleOptionComboBox()
    combo.initStyleOption(option)
    field = combo.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                         QStyle.SubControl.SC_ComboBoxEditField, combo)
    return field.width()


def cut_items(combo: QComboBox) -> list[str]:
    """The items whose text would not show whole as the box's current text."""
    room, metrics = text_room(combo), combo.fontMetrics()
    return [f"{combo.accessibleName()}: {combo.itemText(i)!r} needs "
            f"{metrics.horizontalAdvance(combo.itemText(i))} px of {room}"
            for i in range(combo.count())
            if metrics.horizontalAdvance(combo.itemText(i)) > room]


def shown_combos(window: QWidget) -> list[QComboBox]:
    return [c for c in window.findChildren(QComboBox) if c.isVisibleTo(window)]


def test_every_host_dialog_choice_shows_whole_and_the_dialog_fits(qtbot, tmp_path,
                                                                  monkeypatch, styled_app):
    dialog = open_dialog(qtbot, tmp_path, monkeypatch)
    cut: list[str] = []
    checked: set[str] = set()
    for step in range(dialog.steps.count()):  # each page laid out as a person sees it
        dialog.steps.setCurrentIndex(step)
        settle(qtbot)
        for combo in shown_combos(dialog):
            if combo.isVisible():
                checked.add(combo.accessibleName())
                cut += cut_items(combo)
    assert {"Updates", "Aggregation", "Augmentation", "Dataset", "Precision"} <= checked
    assert checked == {c.accessibleName() for c in dialog.findChildren(QComboBox)}
    assert not cut, cut
    assert fits(dialog.size()) and fits(dialog.sizeHint()), dialog.size()


@pytest.mark.parametrize("target", [JoinTarget.from_address("127.0.0.1:9"), None],
                         ids=["session", "by address"])
def test_every_join_dialog_choice_shows_whole_and_the_dialog_fits(qtbot, ui_home, styled_app,
                                                                  target):
    dialog = JoinDialog(target, lambda t, pin: None)  # type: ignore[arg-type,return-value]
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    cut = [text for combo in shown_combos(dialog) for text in cut_items(combo)]
    assert not cut, cut
    assert fits(dialog.size()) and fits(dialog.sizeHint()), dialog.size()
