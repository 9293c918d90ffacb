"""The app resumes a session as it was hosted: Recent sessions names it, and Resume keeps its
name, port and whether this machine trains too. The Host dialog refuses an output folder
under a file in place, on its step, and stays open."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.hub.outputs import CHECKPOINT_FILE, OutputDir  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402


def stopped_session(folder: Path, host: dict) -> str:
    """A stopped session's folder as a hub leaves it (its checkpoint only named)."""
    config = HostOptions(workers=1, rounds=300, optimizer="adamw").config().to_json()
    OutputDir(folder).write_session({"config": config, "host": host})
    (folder / CHECKPOINT_FILE).write_bytes(b"")
    return str(folder)


def test_recent_sessions_resume_a_session_by_its_name_as_it_was_hosted(
        qtbot, main_window, tmp_path, monkeypatch):
    named = stopped_session(tmp_path / "d-Sone", {"name": "Lab session", "port": 7171,
                                                   "train_here": False})
    older = stopped_session(tmp_path / "d-Stwo", {})  # a session.json that kept nothing
    recent = main_window.recent
    recent.show_folders([named, older])
    first = recent.row(0)
    assert (first.name, first.model, first.data) == ("Lab session", "simplenet", "mnist-sample")
    assert recent.row(1).name == "d-Stwo"
    started: list[HostOptions] = []
    monkeypatch.setattr(main_window, "host", started.append)
    recent.table.selectRow(0)
    click(qtbot, recent.resume_button)
    (options,) = started
    assert (options.name, options.port, options.train_here, options.optimizer) == (
        "Lab session", 7171, False, "adamw")
    assert options.resume and options.out_dir == named


def test_the_host_dialog_refuses_an_output_folder_under_a_file_on_its_step(qtbot, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("not a folder", encoding="utf-8")
    dialog = HostDialog(HostOptions(out_dir=str(afile / "sub")))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    click(qtbot, dialog.start_button)
    assert dialog.isVisible() and dialog.result() == 0
    assert dialog.error is dialog.messages["out_dir"] and dialog.error.isVisible()
    assert f"{afile} is a file, not a folder" in dialog.error.text()
    assert dialog.steps.current_step() == "who"
    assert not (afile.parent / "sub").exists()


def test_the_host_dialog_shows_a_stopped_sessions_own_hosting_and_resumes_with_it(
        qtbot, tmp_path):
    folder = stopped_session(tmp_path / "lab", {"name": "Lab session", "port": 7171,
                                                 "train_here": False})
    dialog = HostDialog(HostOptions(out_dir=str(tmp_path / "new"), name="Mine", port=7000))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    type_into(qtbot, dialog.out_dir, folder)
    assert dialog.resume_button.isVisible()
    assert (dialog.name.text(), dialog.port.value(), dialog.train_here.isChecked()) == (
        "Lab session", 7171, False)
    click(qtbot, dialog.resume_button)
    options = dialog.options()
    assert (options.name, options.port, options.train_here, options.optimizer) == (
        "Lab session", 7171, False, "adamw")
    assert options.resume and dialog.result() == 1
