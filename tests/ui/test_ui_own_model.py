"""Your own model in the app: the Host dialog's file pickers (a Python file's model chosen
from its syntax, nothing in it run; a .pt2; starting weights), and what a worker's window
shows it received."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QFileDialog, QInputDialog  # noqa: E402

from computeshare_desktop.events import ModelReceived  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.models.specs import model_label  # noqa: E402
from computeshare_desktop.models.userfile import model_names  # noqa: E402
from computeshare_desktop.service import Tagged  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402

NET = '''
import pathlib
pathlib.Path(__file__).with_name("ran").write_text("the file ran", encoding="utf-8")
from torch import nn
import torch.nn as tnn


class Block(nn.Module):
    pass


class _Hidden(nn.Module):
    pass


class Settings:
    pass


class Net(tnn.Module):
    pass


def build(num_classes):
    return Net()


def _helper():
    pass
'''


@pytest.fixture
def net_file(tmp_path: Path) -> Path:
    path = tmp_path / "my net.py"
    path.write_text(NET, encoding="utf-8")
    return path


def picking(monkeypatch, path: Path | str) -> None:
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        staticmethod(lambda *a, **k: (str(path), "")))


def test_the_names_come_from_the_files_syntax_and_nothing_in_it_runs(net_file) -> None:
    assert model_names(net_file) == ["Net", "Block", "build"]  # the last class first
    assert not (net_file.parent / "ran").exists()


def test_a_python_file_with_several_models_asks_which_one(qtbot, ui_home, net_file,
                                                          monkeypatch) -> None:
    dialog = HostDialog(HostOptions(out_dir=str(ui_home / "run")))
    qtbot.addWidget(dialog)
    picking(monkeypatch, net_file)
    asked: list[list[str]] = []

    def choose(parent, title, label, items, current, editable):
        asked.append(list(items))
        return items[1], True

    monkeypatch.setattr(QInputDialog, "getItem", staticmethod(choose))
    dialog.model_browse.click()
    assert asked == [["Net", "Block", "build"]]
    assert dialog.options().model == f"{net_file}:Block"
    assert dialog.options().config().model.endswith("my net.py:Block")
    assert not (net_file.parent / "ran").exists()  # chosen from its syntax alone

    monkeypatch.setattr(QInputDialog, "getItem", staticmethod(lambda *a: ("", False)))
    dialog.model_browse.click()  # cancelled: the model stays
    assert dialog.options().model == f"{net_file}:Block"


def test_a_program_a_single_model_and_a_broken_file(qtbot, ui_home, tmp_path,
                                                    monkeypatch) -> None:
    dialog = HostDialog(HostOptions(out_dir=str(ui_home / "run")))
    qtbot.addWidget(dialog)
    picking(monkeypatch, tmp_path / "model.pt2")
    dialog.model_browse.click()
    assert dialog.options().model == str(tmp_path / "model.pt2")

    one = tmp_path / "one.py"
    one.write_text("from torch import nn\nclass Only(nn.Module):\n    pass\n", encoding="utf-8")
    picking(monkeypatch, one)
    dialog.model_browse.click()  # one model: no question
    assert dialog.options().model == f"{one}:Only"

    broken = tmp_path / "broken.py"
    broken.write_text("class Net(nn.Module:\n", encoding="utf-8")
    picking(monkeypatch, broken)
    dialog.model_browse.click()
    assert dialog.error.isVisibleTo(dialog) and "cannot be read as Python" in dialog.error.text()
    assert dialog.options().model == f"{one}:Only"  # unchanged

    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n", encoding="utf-8")
    picking(monkeypatch, empty)
    dialog.model_browse.click()
    assert "defines no nn.Module class or function" in dialog.error.text()

    weights = tmp_path / "start.safetensors"
    picking(monkeypatch, weights)
    dialog.weights_browse.click()
    assert dialog.options().weights == str(weights)


def test_typed_specs_reach_the_config_and_a_bad_one_is_refused(qtbot, ui_home) -> None:
    dialog = HostDialog(HostOptions(out_dir=str(ui_home / "run")))
    qtbot.addWidget(dialog)
    dialog.model.setEditText("torchvision:resnet18")
    dialog.train_only.setText("fc")
    config = dialog.options().config()
    assert (config.model, config.train_only) == ("torchvision:resnet18", "fc")
    dialog.model.setEditText("resnet18")  # a built-in typed by name is the built-in
    assert dialog.options().model == "resnet18"
    dialog.model.setEditText("net.py")  # no NAME: said at Start, next to the buttons
    dialog.accept()
    assert dialog.result() != dialog.DialogCode.Accepted
    assert dialog.error.isVisibleTo(dialog) and "net.py:NAME" in dialog.error.text()


def test_the_worker_window_shows_what_it_received() -> None:
    state = ProgressState("worker", name="laptop")
    received = ModelReceived("my net.py:Net", 9690, 39, "graph checked")
    state.apply([Tagged("worker", received)])
    assert state.received == "Model my net.py:Net: 9,690 parameters to train, 39 ops, " \
                             "graph checked"
    assert state.take_log()[-1] == state.received
    assert model_label("/home/me/models/my net.py:Net") == "my net.py:Net"
    assert model_label("torchvision:resnet18") == "torchvision:resnet18"
