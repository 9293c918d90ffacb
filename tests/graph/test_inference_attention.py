"""A train-mode ``.pt2`` with attention reaches eval mode.

nn.MultiheadAttention (inside nn.TransformerEncoder) exports its dropout as the
``dropout_p`` rate of ``aten.scaled_dot_product_attention``, an op torch tags as drawing
random numbers, with no ``train`` flag: ``eval_module`` left it on and refused the program
("the program draws random numbers outside dropout"). The hub evaluates a program's module
that way, so ``--model vit.pt2`` trained every round and then failed at its first
evaluation; now the rate is set to 0, and a program the hub cannot switch is refused
before the session opens.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from computeshare_desktop.data import dataset_info
from computeshare_desktop.data.arrays import ArrayDataset
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.graph.inference import eval_module_from_program
from computeshare_desktop.hub.config import HubConfig
from computeshare_desktop.hub.user_model import check_evaluable, ship_model

BATCH = torch.export.Dim("batch", min=2)


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.3, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x).mean(dim=1))


class RawAttention(nn.Module):
    """scaled_dot_product_attention called with a dropout rate of its own, in training only
    (as MultiheadAttention and most hand-written attention pass it)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        rate = 0.5 if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, dropout_p=rate).sum(dim=1)


class StochasticDepth(nn.Module):
    """Randomness the graph cannot switch off: a mask drawn in Python."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keep = (torch.rand(x.shape[0], 1, 1) > 0.2).float()
        return self.fc((x * keep).mean(dim=1))


def train_program(model: nn.Module, x: torch.Tensor) -> torch.export.ExportedProgram:
    model.train()
    return torch.export.export(model, (x,), dynamic_shapes=({0: BATCH},))


@pytest.mark.parametrize("make, width", [(Encoder, 16), (RawAttention, 8)])
def test_a_train_mode_attention_program_becomes_the_eval_module(make, width) -> None:
    torch.manual_seed(0)
    model = make()
    x = torch.randn(4, 5, width)
    module = eval_module_from_program(train_program(model, x))
    model.eval()
    with torch.no_grad():
        expected = model(x)
        got, again = module(x), module(x)
    assert torch.equal(got, again)  # nothing random is left
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    rates = [n.args[4] if len(n.args) > 4 else n.kwargs.get("dropout_p", 0.0)
             for n in module.program.graph.nodes  # type: ignore[union-attr]
             if n.target is torch.ops.aten.scaled_dot_product_attention.default]
    assert rates and all(rate == 0.0 for rate in rates)


def test_a_program_that_cannot_reach_eval_mode_is_refused_before_the_session() -> None:
    program = train_program(StochasticDepth(), torch.randn(4, 5, 8))
    with pytest.raises(ConfigError, match="random numbers outside dropout"):
        check_evaluable(program.module())
    info = dataset_info("mnist-sample")
    train = ArrayDataset(torch.zeros(4, 1, 28, 28, dtype=torch.uint8),
                         torch.zeros(4, dtype=torch.int64), info)
    with pytest.raises(ConfigError, match="random numbers outside dropout"):
        ship_model(program.module(), HubConfig(model="net.pt2"), train)


def test_an_attention_program_passes_the_hubs_check() -> None:
    program = train_program(Encoder(), torch.randn(4, 5, 16))
    check_evaluable(program.module())  # no error: the session may open
