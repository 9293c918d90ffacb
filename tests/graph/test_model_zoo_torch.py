"""What torch.export loses of a training forward (found by the model zoo), and the canaries
that say when torch stops losing it: then graph/tracing.py's repair can go."""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.graph import export_training_graph
from computeshare_desktop.graph.tracing import (custom_functions_refused, decompositions,
                                                rnn_dropout_kept)

DROPOUT_OPS = {"aten.native_dropout.default", "aten.bernoulli.p"}


class Stacked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(6, 5, num_layers=3, dropout=0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lstm(x)[0].sum(dim=0)


def dropouts(program: torch.export.ExportedProgram) -> int:
    return sum(str(n.target) in DROPOUT_OPS for n in program.graph.nodes)


def test_torch_drops_a_stacked_rnn_s_dropout_and_we_put_it_back() -> None:
    """torch's _rnn_helper never applies dropout between layers (its condition is never
    true). When this canary fails, torch has fixed it: remove rnn_dropout_kept."""
    x = (torch.randn(4, 2, 6),)
    assert dropouts(torch.export.export(Stacked(), x).run_decompositions()) == 0
    with rnn_dropout_kept():
        program = torch.export.export(Stacked(), x).run_decompositions()
    assert dropouts(program) == 2  # after each layer but the last, as the eager kernel


class Detaches(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        return h - h.detach().mean()


def targets(program: torch.export.ExportedProgram) -> set[str]:
    return {str(n.target) for n in program.graph.nodes if n.op == "call_function"}


def test_torch_decomposes_detach_into_alias_and_we_keep_it() -> None:
    """Through an alias gradients flow: the canary for torch's default table, then ours."""
    program = torch.export.export(Detaches(), (torch.randn(2, 4),))
    assert "aten.alias.default" in targets(program.run_decompositions())
    kept = program.run_decompositions(decompositions())
    assert "aten.detach.default" in targets(kept) and "aten.alias.default" not in targets(kept)


def test_a_no_grad_block_s_outputs_are_detached_in_the_graph() -> None:
    class NoGrad(Detaches):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.fc(x)
            with torch.no_grad():
                centre = h.mean()
            return h - centre

    graph = export_training_graph(NoGrad(), torch.randn(2, 4))
    assert b"torch.ops.aten.detach.default" in graph.program


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return x * 1

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return 2 * grad


def test_an_autograd_function_is_refused_and_apply_is_put_back() -> None:
    original = torch.autograd.Function.__dict__["apply"]
    model = nn.Linear(3, 3)
    with pytest.raises(ConfigError, match="torch.autograd.Function Twice"):
        with custom_functions_refused(model):
            Twice.apply(torch.ones(2))
    assert torch.autograd.Function.__dict__["apply"] is original
    x = torch.ones(2, requires_grad=True)
    Twice.apply(x).sum().backward()
    assert torch.equal(x.grad, torch.full((2,), 2.0))


def test_another_thread_s_autograd_function_is_not_the_model_s() -> None:
    done = threading.Event()
    outcome: list[torch.Tensor] = []

    def elsewhere() -> None:
        outcome.append(Twice.apply(torch.ones(2)))
        done.set()

    with custom_functions_refused(nn.Linear(3, 3)):
        thread = threading.Thread(target=elsewhere)
        thread.start()
        assert done.wait(10)
        thread.join(10)
    assert len(outcome) == 1
