"""The Host dialog's TensorBoard check box: without the tensorboard package, Start hosting
stays in the dialog and says under the check box what to install."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.hub.tensorboard_log import INSTALL  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.ui import click  # noqa: E402


def test_without_the_package_the_check_box_says_what_to_install(qtbot, ui_home, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # as where the extra is missing
    dialog = HostDialog(HostOptions(out_dir=str(ui_home / "run")))
    qtbot.addWidget(dialog)
    dialog.show()
    click(qtbot, dialog.tensorboard)
    assert dialog.tensorboard.isChecked()
    click(qtbot, dialog.start_button)
    assert dialog.isVisible() and dialog.result() == 0  # not started
    label = dialog.error
    assert label is dialog.messages["tensorboard"] and label.isVisible()
    assert INSTALL in label.text()
    box = dialog.tensorboard.geometry()
    below = label.mapTo(dialog, label.rect().topLeft()).y() - \
        dialog.tensorboard.mapTo(dialog, dialog.tensorboard.rect().bottomLeft()).y()
    assert 0 <= below <= 3 * box.height()  # right under the check box, on its step
