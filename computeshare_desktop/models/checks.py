"""What a model is given and must give back: the inputs a dataset makes, the builder
arguments it offers, and the one-sample-batch check the hub runs before a session opens.

Images are N×C×H×W; tables are N×F, for a ``DatasetInfo`` whose ``in_features`` is
non-zero (``kind`` "table").
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from computeshare_desktop.data import DatasetInfo
from computeshare_desktop.errors import ConfigError

SAMPLE_BATCH = 2  # BatchNorm in train mode needs more than one value per channel
ERROR_LINES = 4  # of an exception's traceback, in a ConfigError
# Frames in these folders are not where a user's model went wrong.
_LIBRARIES = tuple(str(folder) + os.sep for folder in
                   (Path(torch.__path__[0]), Path(__file__).resolve().parents[1]))


def in_features(info: DatasetInfo) -> int | None:
    """The number of columns of a table dataset; None for images."""
    return info.in_features or None


def refuse_table(model: str, info: DatasetInfo) -> None:
    """Raise ConfigError when ``info`` is a table: ``model`` takes images only."""
    if in_features(info) is not None:
        raise ConfigError(f"{model} takes images; {info.name} is a table of "
                          f"{in_features(info)} features: use --model mlp, or your own "
                          f"model (PATH.py:NAME, built with in_features)")


def sample_shape(info: DatasetInfo) -> tuple[int, ...]:
    """The shape of one input: (C, H, W) for images, (F,) for tables."""
    features = in_features(info)
    return (features,) if features is not None else info.shape


def builder_arguments(info: DatasetInfo) -> dict[str, object]:
    """The keyword arguments a user's model may ask for, by name."""
    if (features := in_features(info)) is not None:
        return {"num_classes": info.num_classes, "in_features": features}
    size: object = info.height if info.height == info.width else (info.height, info.width)
    return {"num_classes": info.num_classes, "in_channels": info.channels, "image_size": size}


def sample_batch(info: DatasetInfo, batch: int = SAMPLE_BATCH) -> torch.Tensor:
    """Random normalised float32 inputs shaped as the data's (the global RNG is not used)."""
    generator = torch.Generator().manual_seed(0)
    return torch.randn((batch, *sample_shape(info)), generator=generator)


def first_lines(exc: BaseException, lines: int = ERROR_LINES) -> str:
    """The exception in one line, then where: the innermost frames of the user's code
    (neither torch's nor ours nor the import machinery's) and the frame that raised."""
    message = str(exc).strip().splitlines()
    head = f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    if lines < 2 or not frames:
        return head
    users = [f for f in frames[:-1] if not f.filename.startswith(_LIBRARIES)]
    shown = [*users[max(0, len(users) - lines + 2):], frames[-1]]
    return "\n".join([head, *(f"  {f.filename}, line {f.lineno}, in {f.name}" for f in shown)])


def check_model_outputs(model: nn.Module, info: DatasetInfo) -> None:
    """Run one sample batch through ``model`` on the CPU, in training mode and, where the
    model can switch, in eval mode; each must give (batch, num_classes) floats. The
    model's weights, buffers (BatchNorm statistics), mode and the global RNG are left as
    they were.

    Raises:
        ConfigError: the forward raised (its first lines), or the output is not a float
            tensor of (batch, num_classes).
    """
    inputs = sample_batch(info)
    expected = (inputs.shape[0], info.num_classes)
    for training in _modes(model):
        with _untouched(model, training), torch.no_grad():
            try:
                output = model(inputs)
            except Exception as exc:
                raise ConfigError(
                    f"the model fails on a batch of {shape_text(inputs.shape)} inputs "
                    f"({'train' if training else 'eval'} mode):\n{first_lines(exc)}") from exc
        _check_output(output, expected)


def _check_output(output: object, expected: tuple[int, int]) -> None:
    if not isinstance(output, torch.Tensor):
        raise ConfigError(f"the model returns a {type(output).__name__}, expected one tensor "
                          f"of logits shaped {shape_text(expected)} (batch, classes)")
    if tuple(output.shape) != expected or not output.is_floating_point():
        raise ConfigError(f"the model returns {output.dtype} {shape_text(output.shape)}, "
                          f"expected float {shape_text(expected)} (batch, classes): size its "
                          f"last layer to the dataset's {expected[1]} classes")


def shape_text(shape: tuple[int, ...] | torch.Size) -> str:
    """``(2, 10)``."""
    return "(" + ", ".join(str(int(d)) for d in shape) + ")"


def _modes(model: nn.Module) -> tuple[bool, ...]:
    """Training first; eval too unless the mode is fixed (a torch.export program, whose
    train() and eval() raise: it runs in the mode it was exported in)."""
    try:
        model.train(model.training)
    except NotImplementedError:
        return (model.training,)
    return (True, False)


@contextmanager
def _untouched(model: nn.Module, training: bool) -> Iterator[None]:
    """Run in ``training`` mode, then put back the mode, the buffers and the RNG."""
    was_training = model.training
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    if training != was_training:
        model.train(training)
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        if model.training != was_training:
            model.train(was_training)
        with torch.no_grad():
            for buffer, saved in buffers:
                buffer.copy_(saved)
