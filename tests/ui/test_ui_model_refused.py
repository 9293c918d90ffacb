"""A model the session would refuse is said inside the Host dialog: its
export and the workers' contract run on a thread while the dialog stays open and Start reads
"Checking the model…"; the failure shows under the model field on its step, in plain words
that name the dialog's own check box (not a flag), with torch's lines behind Details; no
progress window and no PIN for a session that never opened. Ticking the box named opens it."""

from __future__ import annotations


import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtWidgets import QApplication  # noqa: E402

from computeshare_desktop.gui.host_steps import WHAT  # noqa: E402
from computeshare_desktop.gui.progress_window import ProgressWindow  # noqa: E402
from helpers.ui import click  # noqa: E402
from helpers.app import start_with  # noqa: E402
from helpers.graph import BRANCHES, flat_net_file  # noqa: E402

UNLISTED = "        x = torch.erfinv(x.clamp(-0.5, 0.5))  # exports; not on the workers' list"


def assert_refused_under_the_model(dialog, main_window, *words: str) -> None:
    message = dialog.messages["model"]
    assert dialog.isVisible() and dialog.result() != dialog.DialogCode.Accepted
    assert dialog.steps.current_step() == WHAT and message.isVisible()
    assert dialog.error is message and dialog.message.isHidden()
    assert dialog.start_button.isEnabled() and QApplication.overrideCursor() is None
    text = message.text()
    for word in words:
        assert word in text
    label = dialog.editors["offer_code"].option.label
    assert f"tick “{label}”" in text and "--" not in text and "Traceback" not in text
    # under the model's row: the message right below the field, Details below the message
    field, details = dialog.model, dialog.model_details
    assert field.mapTo(dialog, field.rect().bottomLeft()).y() <= message.mapTo(dialog,
                                                                               message.pos()).y()
    assert message.geometry().bottom() <= details.geometry().top()
    assert details.isVisible() and details.text.isHidden() and not details.expanded
    assert main_window.progress_windows == []
    assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, ProgressWindow)]


def test_a_model_that_does_not_export_is_said_under_its_field_and_the_box_named_opens_it(
        qtbot, main_window, tmp_path):
    dialog = start_with(qtbot, main_window, tmp_path, flat_net_file(tmp_path, BRANCHES))
    assert_refused_under_the_model(dialog, main_window, "cannot be exported",
                                   "branches on tensor values")
    assert "GuardOnDataDependentSymNode" not in dialog.messages["model"].text()

    details = dialog.model_details
    click(qtbot, details.toggle)  # the technical lines, on demand
    assert details.expanded and details.text.isVisible()
    lines = details.text.toPlainText()
    assert "GuardOnDataDependentSymNode" in lines and "Traceback" in lines
    assert "if x.sum() > 0:" in lines  # the person's own line, in torch's traceback
    click(qtbot, details.toggle)
    assert details.text.isHidden()

    click(qtbot, dialog.offer_code)  # the way out the message names
    click(qtbot, dialog.start_button)
    assert dialog.wait_checks(60)
    qtbot.waitUntil(lambda: len(main_window.progress_windows) == 1, timeout=10_000)
    assert not dialog.isVisible()


def test_a_model_the_workers_contract_refuses_is_said_the_same_way(
        qtbot, main_window, tmp_path):
    dialog = start_with(qtbot, main_window, tmp_path, flat_net_file(tmp_path, UNLISTED))
    assert_refused_under_the_model(dialog, main_window, "workers refuse", "erfinv")
    click(qtbot, dialog.model_details.toggle)
    assert "is not allowed" in dialog.model_details.text.toPlainText()
