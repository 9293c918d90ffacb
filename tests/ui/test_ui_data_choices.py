"""The Host dialog follows the data chosen: the Session name's
placeholder names the chosen folder, not the set the dialog opened with, and Test fraction
is off, with the reason under it, for a folder that brings its own train/ and test/."""

from __future__ import annotations

import socket

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.gui.data_preview import OWN_SPLIT  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402


def test_the_name_and_test_fraction_follow_the_chosen_folder(qtbot, tmp_path):
    split, plain = tmp_path / "pets", tmp_path / "birds"
    for folder in (split / "train" / "cat", split / "test" / "cat", plain / "cat"):
        folder.mkdir(parents=True)
    dialog = HostDialog(HostOptions(dataset="mnist-sample", out_dir=str(tmp_path / "run")))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    host = socket.gethostname()
    assert dialog.name.placeholderText() == f"{host} — mnist-sample"
    fraction, note = dialog.test_fraction, dialog.data_panel.split_note

    dialog.dataset.setEditText(str(split))
    dialog.data.preview()  # what the field's timer does once typing stops
    assert dialog.name.placeholderText() == f"{host} — pets"
    assert not fraction.isEnabled() and note.isVisible() and note.text() == OWN_SPLIT
    assert fraction.toolTip() == OWN_SPLIT

    dialog.dataset.setEditText(str(plain))
    dialog.data.preview()
    assert dialog.name.placeholderText() == f"{host} — birds"
    assert fraction.isEnabled() and note.isHidden() and fraction.toolTip() != OWN_SPLIT
    dialog.data_panel.previews.wait(10)
