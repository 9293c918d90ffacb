"""The hub's outputs for people: an eval-mode program anyone can load with
``torch.export.load``, and an eval-mode module from a train-mode program.

``export_inference_program`` wraps the module with the session's normalization, so the
program takes raw inputs (images: float32 N×C×H×W in [0, 1]) and returns logits, for any
batch size. Train or eval mode is fixed at export; a ``.pt2`` the user gave in train mode
has no module to switch, so ``eval_module_from_program`` rewrites its graph instead: every
op with a ``train``/``training`` flag (dropout, batch norm) gets ``False``, and attention's
own dropout rate (``dropout_p``: nn.MultiheadAttention, nn.TransformerEncoder) gets 0.
Randomness left after that (stochastic depth written in Python, say) cannot be switched off
from the graph, and is refused rather than shipped in a program meant for evaluation.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import torch
from torch import nn

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.graph.export import export_failure, mode

_FLAGS = ("train", "training")
_STATS = "running_mean"  # batch norm without running statistics uses the batch's anyway
_RATE = "dropout_p"  # attention's own dropout (scaled_dot_product_attention and kin)


class Normalized(nn.Module):
    """``model((x - mean) / std)``, with mean and std per channel (dimension 1)."""

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, model: nn.Module, mean: Sequence[float], std: Sequence[float],
                 dims: int) -> None:
        super().__init__()
        if len(mean) != len(std) or any(s <= 0 for s in std):
            raise ConfigError(f"normalization needs as many positive stds as means, got "
                              f"mean={list(mean)} std={list(std)}")
        self.model = model
        shape = (1, len(mean)) + (1,) * max(dims - 2, 0)
        self.register_buffer("mean", torch.tensor(list(mean), dtype=torch.float32).view(shape))
        self.register_buffer("std", torch.tensor(list(std), dtype=torch.float32).view(shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model((x - self.mean) / self.std)


class FixedMode(nn.Module):
    """A program whose mode was fixed at export, as a module whose ``train()``/``eval()``
    only set the flag (a program's own ``train()`` raises)."""

    def __init__(self, program: nn.Module) -> None:
        super().__init__()
        self.program = program

    def train(self, mode: bool = True) -> FixedMode:
        self.training = mode
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.program(x)


def export_inference_program(model: nn.Module, example: torch.Tensor, mean: Sequence[float],
                             std: Sequence[float]) -> bytes:
    """A ``torch.export.save`` archive of ``model`` in eval mode with the normalization
    inside; its batch dimension is dynamic (1 and up). Empty ``mean`` and ``std`` mean no
    normalization (tables of raw values). The model's mode is restored after.

    Raises:
        ConfigError: the model does not export (the first lines and a hint).
    """
    wrapped: nn.Module = model if not mean and not std else \
        Normalized(model, mean, std, example.dim())
    batch = torch.export.Dim("batch", min=1)
    # a batch of 1 would fix the batch dimension: export with 2 samples, any batch runs
    example = example[:2] if example.shape[0] >= 2 else torch.cat([example, example])
    with mode(model, False), mode(wrapped, False):
        try:
            program = torch.export.export(wrapped, (example,), dynamic_shapes=({0: batch},))
        except Exception as err:  # torch raises many kinds; each becomes one clear error
            raise ConfigError(export_failure(err)) from err
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    return buffer.getvalue()


def program_module(program: torch.export.ExportedProgram) -> torch.fx.GraphModule:
    """``program.module()`` with tensors of its own: ``torch.export.load`` gives views into
    one blob, which export (of this module, again) refuses to detach in place. The mode is
    the program's; ``export_training_graph`` takes the result as the hub's model."""
    module = program.module()
    with torch.no_grad():
        for owner in module.modules():
            for name, tensor in list(vars(owner).items()):
                if isinstance(tensor, torch.Tensor) and tensor._base is not None:
                    setattr(owner, name, tensor.clone())
            for name, buffer in owner._buffers.items():
                if buffer is not None and buffer._base is not None:
                    owner._buffers[name] = buffer.clone()
            for name, param in owner._parameters.items():
                if param is not None and param._base is not None:
                    owner._parameters[name] = nn.Parameter(param.clone(), param.requires_grad)
    return module


def eval_module_from_program(program: torch.export.ExportedProgram) -> nn.Module:
    """An eval-mode module from a train-mode program (a ``.pt2`` the user gave): dropout
    and batch norm switched to inference, on copies of the program's tensors.

    Raises:
        ConfigError: the graph draws random numbers other than dropout's.
    """
    return eval_module(program_module(program))


def eval_module(module: torch.fx.GraphModule) -> nn.Module:
    """``eval_module_from_program`` for a program's module (``program.module()``, whose
    mode is fixed): its graph is rewritten in place, so pass a copy to keep the original.

    Raises:
        ConfigError: the graph draws random numbers other than dropout's.
    """
    graph = module.graph
    for node in graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            _to_eval(node)
    random = sorted({str(n.target) for n in graph.nodes if n.op == "call_function"
                     and isinstance(n.target, torch._ops.OpOverload)
                     and torch.Tag.nondeterministic_seeded in n.target.tags
                     and not _switched_off(n)})
    if random:
        raise ConfigError(f"the program draws random numbers outside dropout ({random}), "
                          "which an eval-mode program cannot switch off: give the Python "
                          "module, or a .pt2 exported in eval mode")
    module.recompile()
    return FixedMode(module)


def _flag_index(node: torch.fx.Node) -> int | None:
    arguments = node.target._schema.arguments  # type: ignore[union-attr]
    return next((i for i, a in enumerate(arguments) if a.name in _FLAGS
                 and isinstance(a.type, torch.BoolType)), None)


def _argument(node: torch.fx.Node, index: int) -> object:
    name = node.target._schema.arguments[index].name  # type: ignore[union-attr]
    return node.args[index] if index < len(node.args) else node.kwargs.get(name)


def _rate_index(node: torch.fx.Node) -> int | None:
    """Where an op takes a dropout rate of its own (attention's ``dropout_p``)."""
    arguments = node.target._schema.arguments  # type: ignore[union-attr]
    return next((i for i, a in enumerate(arguments) if a.name == _RATE
                 and isinstance(a.type, torch.FloatType)), None)


def _to_eval(node: torch.fx.Node) -> None:
    index, rate = _flag_index(node), _rate_index(node)
    if rate is not None:  # MultiheadAttention's dropout, inside the fused attention op
        _set(node, rate, 0.0)
    if index is None:
        return
    names = [a.name for a in node.target._schema.arguments]  # type: ignore[union-attr]
    if _STATS in names and _argument(node, names.index(_STATS)) is None:
        return
    _set(node, index, False)


def _set(node: torch.fx.Node, index: int, value: bool | float) -> None:
    """Argument ``index`` of ``node`` set to ``value``, where it is given (positionally or
    by name) or else by name."""
    name = node.target._schema.arguments[index].name  # type: ignore[union-attr]
    if index < len(node.args):
        node.args = (*node.args[:index], value, *node.args[index + 1:])
    else:
        node.kwargs = {**node.kwargs, name: value}


def _switched_off(node: torch.fx.Node) -> bool:
    index, rate = _flag_index(node), _rate_index(node)
    if rate is not None:
        return _argument(node, rate) in (None, 0.0)  # None: not given, its default 0
    return index is not None and _argument(node, index) is False
