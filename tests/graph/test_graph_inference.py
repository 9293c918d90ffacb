"""The eval-mode program for people: normalization inside, logits out, any batch, and it
loads with torch.export.load in a Python that never imported this package."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
import torch
from graph_nets import tiny_resnet
from torch import nn

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.graph.inference import (
    eval_module_from_program,
    export_inference_program,
)

MEAN, STD = [0.5, 0.45, 0.4], [0.25, 0.2, 0.3]
CHILD = """
import sys, torch
ep = torch.export.load(sys.argv[1])
x = torch.load(sys.argv[2], weights_only=True)
out = {"all": ep.module()(x), "one": ep.module()(x[:1])}
torch.save(out, sys.argv[3])
assert not [m for m in sys.modules if m.startswith("computeshare")]
"""


def trained() -> nn.Module:
    model = tiny_resnet(seed=3)
    for _ in range(3):  # running statistics away from their start
        model(torch.randn(8, 3, 16, 16))
    return model


def reference(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    model.eval()
    try:
        mean, std = torch.tensor(MEAN).view(1, 3, 1, 1), torch.tensor(STD).view(1, 3, 1, 1)
        return model((x - mean) / std).detach()
    finally:
        model.train()


def test_the_program_scores_the_same_logits_in_a_fresh_python(tmp_path):
    model = trained()
    x = torch.rand(5, 3, 16, 16)
    (tmp_path / "model.pt2").write_bytes(export_inference_program(model, x, MEAN, STD))
    assert model.training
    torch.save(x, tmp_path / "x.pt")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-c", CHILD, "model.pt2", "x.pt", "out.pt"],
                   cwd=tmp_path, env=env, check=True, timeout=180)
    out = torch.load(tmp_path / "out.pt", weights_only=True)
    expected = reference(model, x)
    assert out["all"].shape == (5, 10) and out["one"].shape == (1, 10)
    assert torch.allclose(out["all"], expected, atol=1e-5)
    assert torch.allclose(out["one"], expected[:1], atol=1e-5)


def test_without_normalization_for_tables():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.Dropout(0.5),
                          nn.Linear(16, 3)).train()
    model(torch.randn(8, 6))
    x = torch.randn(4, 6)
    program = torch.export.load(io.BytesIO(export_inference_program(model, x[:1], [], [])))
    assert torch.allclose(program.module()(x), model.eval()(x), atol=1e-6)


def test_a_train_mode_program_becomes_an_eval_module():
    """A .pt2 the user exported in train mode: dropout and batch norm switch to
    inference, and the result exports again as the program people get."""
    model = trained()
    archive = io.BytesIO()
    torch.export.save(torch.export.export(
        model, (torch.randn(2, 3, 16, 16),),
        dynamic_shapes=({0: torch.export.Dim("batch", min=2)},)), archive)
    module = eval_module_from_program(torch.export.load(io.BytesIO(archive.getvalue())))
    x = torch.rand(3, 3, 16, 16)
    assert torch.allclose(module(x), model.eval()(x), atol=1e-5)
    model.train()
    again = export_inference_program(module, x, MEAN, STD)
    logits = torch.export.load(io.BytesIO(again)).module()(x)
    assert torch.allclose(logits, reference(model, x), atol=1e-5)


def test_randomness_the_graph_cannot_switch_off_is_refused():
    class StochasticDepth(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * torch.bernoulli(torch.full_like(x, 0.8)) / 0.8

    program = torch.export.export(StochasticDepth(), (torch.randn(2, 4),))
    with pytest.raises(ConfigError, match="random numbers outside dropout"):
        eval_module_from_program(program)
