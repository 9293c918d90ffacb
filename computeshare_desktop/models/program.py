"""``PATH.pt2``: a program the user saved with ``torch.export.save``, loaded on the hub.

``torch.export.load`` unpickles what the archive asks it to (FACTS: torch.export), so it
reads only the user's own file on the hub, here; a worker never loads a program this way
(it gets the graph through its own strict loader). The program must have been exported
in train mode (its BatchNorm and Dropout train) with a dynamic batch dimension, taking one
input shaped as the data's.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import torch
from torch import nn

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models.checks import first_lines

HOW_TO_EXPORT = ("save it with model.train(); torch.export.save(torch.export.export(model, "
                 "(x,), dynamic_shapes=({0: torch.export.Dim('batch', min=2)},)), PATH) "
                 "where x is a batch of at least 2 inputs")
# The mode arguments of ATen ops whose behaviour depends on train/eval (batch_norm's
# "training", dropout's "train"): a program exported in eval mode has them False.
_MODE_ARGUMENTS = ("training", "train")


def load_program(path: Path, sample_shape: tuple[int, ...]) -> nn.Module:
    """The program's module, after checking it trains on inputs of ``sample_shape``.

    Raises:
        ConfigError: no such file; not a torch.export archive; it fails to load; it was
            exported in eval mode, with a fixed batch, or for other inputs.
    """
    if not path.is_file():
        raise ConfigError(f"program {path} does not exist")
    _check_archive(path)
    try:
        program = torch.export.load(path)
    except Exception as exc:
        raise ConfigError(f"{path} is not a program torch.export.load can read:\n"
                          f"{first_lines(exc)}") from exc
    _check_input(path, program, sample_shape)
    _check_train_mode(path, program)
    module: nn.Module = program.module()
    return module


def _check_archive(path: Path) -> None:
    """A .pt2 is a zip whose entries sit in one folder beside an ``archive_format``; this
    tells a text file or another zip apart without torch.export.load's logged traceback."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ConfigError(f"{path} is not a torch.export program (.pt2): {exc}; "
                          f"{HOW_TO_EXPORT}") from exc
    if not any(n.endswith("/archive_format") or n.endswith("/models/model.json")
               for n in names):
        raise ConfigError(f"{path} is a zip but not a torch.export program (.pt2); "
                          f"{HOW_TO_EXPORT}")


def _user_inputs(program: Any) -> list[Any]:
    wanted = set(program.graph_signature.user_inputs)
    return [n for n in program.graph.nodes if n.op == "placeholder" and n.name in wanted]


def _check_input(path: Path, program: Any, sample_shape: tuple[int, ...]) -> None:
    inputs = _user_inputs(program)
    if len(inputs) != 1:
        raise ConfigError(f"{path} takes {len(inputs)} inputs; a model takes one batch")
    shape = tuple(inputs[0].meta["val"].shape)
    if not isinstance(shape[0], torch.SymInt):
        raise ConfigError(f"{path} was exported with a fixed batch of {shape[0]}; "
                          f"{HOW_TO_EXPORT}")
    if len(shape) != len(sample_shape) + 1 or any(
            not isinstance(dim, torch.SymInt) and dim != size  # a dynamic size takes any
            for dim, size in zip(shape[1:], sample_shape, strict=True)):
        took = ", ".join(str(d) for d in shape[1:])
        wants = ", ".join(str(d) for d in sample_shape)
        raise ConfigError(f"{path} takes inputs of (N, {took}); the data's are (N, {wants})")


def _check_train_mode(path: Path, program: Any) -> None:
    for node in program.graph.nodes:
        schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
        if schema is None:
            continue
        for position, argument in enumerate(schema.arguments):
            if argument.name in _MODE_ARGUMENTS and _value(node, position, argument) is False:
                raise ConfigError(f"{path} was exported in eval mode ({node.target} runs as "
                                  f"for inference); {HOW_TO_EXPORT}")


def _value(node: Any, position: int, argument: Any) -> object:
    if argument.name in node.kwargs:
        return node.kwargs[argument.name]
    if position < len(node.args):
        return node.args[position]
    return argument.default_value if argument.has_default_value() else None
