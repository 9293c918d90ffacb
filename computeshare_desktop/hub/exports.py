"""``trained_model.pt2``: the trained model as an eval-mode program anyone can run.

The program takes raw inputs and returns logits, with the session's normalization inside:
images as float32 N×C×H×W in [0, 1] at the session's image size, tables as float32 N×F
of raw values (``raw_example`` makes one such batch). It loads with ``torch.export.load``
alone, in a Python that never imported this package. The hub exports it when the session
is over (``HubSession.finish`` and ``save_stopped``), from the model object the hub
trained, whatever built it: a built-in, the user's module, or a program's module, whose
mode is fixed and whose graph is switched to inference (``evaluation.eval_ready``).
"""

from __future__ import annotations

import copy
import logging
import threading

import torch
from torch import nn

from ..data import DatasetInfo
from ..errors import ConfigError
from ..evaluation import eval_ready
from ..graph.inference import export_inference_program
from ..models.checks import first_lines, sample_shape

log = logging.getLogger(__name__)

# torch.export traces through process-wide state (dynamo): one export at a time here.
_EXPORTING = threading.Lock()


def raw_example(info: DatasetInfo, batch: int = 2) -> torch.Tensor:
    """A batch of the raw inputs the program takes: images in [0, 1] at the data's size,
    or rows of a table's columns."""
    generator = torch.Generator().manual_seed(0)
    return torch.rand((batch, *sample_shape(info)), generator=generator)


def inference_module(model: nn.Module) -> nn.Module:
    """A copy of ``model`` on the CPU that eval mode reaches: a module as it is, a
    program's module (train or eval raise there) with its graph switched to inference.

    Raises:
        ConfigError: a program's graph draws random numbers other than dropout's.
    """
    return eval_ready(copy.deepcopy(model).to("cpu"))


def export_program(model: nn.Module, info: DatasetInfo) -> bytes:
    """The ``torch.export.save`` archive of ``model`` in eval mode with ``info``'s
    normalization inside; the caller's model is left as it was.

    Raises:
        ConfigError: the model does not export (the first lines and a hint).
    """
    module = inference_module(model)
    with _EXPORTING:
        return export_inference_program(module, raw_example(info), info.mean, info.std)


def failure_text(exc: BaseException) -> str:
    """What a failed export says: a ConfigError's own text (the first lines and a hint),
    else the error's first line."""
    return str(exc).strip() if isinstance(exc, ConfigError) else first_lines(exc, 1)
