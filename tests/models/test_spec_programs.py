"""PATH.pt2: a program the user saved with torch.export.save (train mode, dynamic batch)
loads on the hub and trains; an eval-mode or fixed-batch export, other inputs, a text
file and a zip of something else are refused with a clear reason."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import torch
from torch import nn

from computeshare_desktop.data import dataset_info
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models import (build_model_from_spec, freeze_except,
                                         load_starting_weights, parse_model_spec)

MNIST = dataset_info("mnist")
HOW = "save it with model.train(); torch.export.save(torch.export.export(model"


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.gelu(self.bn(self.conv(x))).mean(dim=(2, 3))
        return self.fc(self.drop(x))


def _export(path: Path, *, train: bool = True, dynamic: bool = True,
            shape: tuple[int, ...] = (1, 28, 28)) -> Path:
    model = Net().train(train)
    if shape[0] != 1:
        model.conv = nn.Conv2d(shape[0], 4, 3)
    dims = ({0: torch.export.Dim("batch", min=2)},) if dynamic else None
    program = torch.export.export(model, (torch.randn(4, *shape),), dynamic_shapes=dims)
    torch.export.save(program, path)
    return path


def _build(path: Path) -> nn.Module:
    return build_model_from_spec(parse_model_spec(str(path)), MNIST, seed=0)


def _error(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        _build(path)
    return str(caught.value)


def test_a_train_mode_program_with_a_dynamic_batch_trains(tmp_path) -> None:
    model = _build(_export(tmp_path / "net.pt2"))
    assert [n for n, _ in model.named_parameters()] == [
        "conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias"]
    statistics = model.get_buffer("bn.running_mean").clone()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for batch in (2, 5, 32):
        optimizer.zero_grad()
        logits = model(torch.randn(batch, 1, 28, 28))
        assert logits.shape == (batch, 10)
        nn.functional.cross_entropy(logits, torch.arange(batch) % 10).backward()
        optimizer.step()
    assert all(p.grad is not None for p in model.parameters())
    assert not torch.equal(model.get_buffer("bn.running_mean"), statistics)


def test_the_sample_batch_leaves_the_statistics_alone(tmp_path) -> None:
    path = _export(tmp_path / "net.pt2")
    saved = torch.export.load(path).module().get_buffer("bn.running_mean")
    assert torch.equal(_build(path).get_buffer("bn.running_mean"), saved)


def test_an_eval_mode_program_is_refused(tmp_path) -> None:
    message = _error(_export(tmp_path / "eval.pt2", train=False))
    assert message.startswith(f"{tmp_path / 'eval.pt2'} was exported in eval mode (aten.")
    assert HOW in message


def test_a_fixed_batch_is_refused(tmp_path) -> None:
    message = _error(_export(tmp_path / "fixed.pt2", dynamic=False))
    assert message.startswith(f"{tmp_path / 'fixed.pt2'} was exported with a fixed batch of 4")
    assert "Dim('batch', min=2)" in message


def test_other_inputs_are_refused(tmp_path) -> None:
    path = _export(tmp_path / "rgb.pt2", shape=(3, 32, 32))
    assert _error(path) == f"{path} takes inputs of (N, 3, 32, 32); the data's are (N, 1, 28, 28)"


def test_a_missing_program(tmp_path) -> None:
    assert _error(tmp_path / "none.pt2") == f"program {tmp_path / 'none.pt2'} does not exist"


def test_a_text_file_is_not_a_program(tmp_path) -> None:
    path = tmp_path / "notes.pt2"
    path.write_text("not a program", encoding="utf-8")
    message = _error(path)
    assert message.startswith(f"{path} is not a torch.export program (.pt2): File is not a zip")
    assert HOW in message


def test_a_zip_of_something_else_is_not_a_program(tmp_path) -> None:
    path = tmp_path / "photos.pt2"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("photos/cat.txt", "meow")
    assert _error(path).startswith(f"{path} is a zip but not a torch.export program (.pt2)")


def test_a_damaged_program_is_refused_with_the_loader_error(tmp_path) -> None:
    path = _export(tmp_path / "net.pt2")
    damaged = tmp_path / "damaged.pt2"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(damaged, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            target.writestr(item, b"{" if item.filename.endswith("models/model.json") else data)
    assert _error(damaged).startswith(f"{damaged} is not a program torch.export.load can read:")


def test_starting_weights_and_train_only_work_on_a_program(tmp_path) -> None:
    path = _export(tmp_path / "net.pt2")
    spec = parse_model_spec(str(path))
    model = build_model_from_spec(spec, MNIST)
    source = Net()
    torch.save(source.state_dict(), tmp_path / "net.pth")
    load_starting_weights(model, str(tmp_path / "net.pth"), spec)
    assert torch.equal(model.get_parameter("conv.weight"), source.conv.weight)
    assert freeze_except(model, ["fc"]) == ["conv.weight", "conv.bias", "bn.weight", "bn.bias"]
    model(torch.randn(3, 1, 28, 28)).sum().backward()
    assert [n for n, p in model.named_parameters() if p.grad is not None] == ["fc.weight",
                                                                             "fc.bias"]


def test_dynamic_image_sizes_are_accepted_and_another_rank_is_not(tmp_path) -> None:
    model, size = Net().train(), torch.export.Dim("size", min=8, max=64)
    dims = ({0: torch.export.Dim("batch", min=2), 2: size, 3: size},)
    program = torch.export.export(model, (torch.randn(4, 1, 28, 28),), dynamic_shapes=dims)
    torch.export.save(program, tmp_path / "any_size.pt2")
    assert _build(tmp_path / "any_size.pt2")(torch.randn(3, 1, 28, 28)).shape == (3, 10)
    flat = nn.Sequential(nn.Linear(784, 10)).train()
    program = torch.export.export(flat, (torch.randn(4, 784),),
                                  dynamic_shapes=({0: torch.export.Dim("batch", min=2)},))
    torch.export.save(program, tmp_path / "flat.pt2")
    assert _error(tmp_path / "flat.pt2").endswith("takes inputs of (N, 784); the data's are "
                                                  "(N, 1, 28, 28)")
