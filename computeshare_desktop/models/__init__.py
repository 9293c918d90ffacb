"""Models: the built-ins by name, specs for the user's own (torchvision, a Python file, a
torch.export program), starting weights, and the weights as flat float32 vectors."""

from computeshare_desktop.models.checks import check_model_outputs
from computeshare_desktop.models.flat import (
    adopt,
    fingerprint,
    flat_gradients,
    flat_parameters,
    flatten,
    gradients,
    load_flat_parameters,
    parameter_count,
    split,
    trainable,
)
from computeshare_desktop.models.freeze import freeze_except, parse_prefixes
from computeshare_desktop.models.registry import MODELS, build_model
from computeshare_desktop.models.specs import (ModelSpec, SpecKind, build_model_from_spec,
                                               parse_model_spec)
from computeshare_desktop.models.weights import load_starting_weights, misfit

__all__ = [
    "MODELS",
    "ModelSpec",
    "SpecKind",
    "adopt",
    "build_model",
    "build_model_from_spec",
    "check_model_outputs",
    "fingerprint",
    "flat_gradients",
    "flat_parameters",
    "flatten",
    "freeze_except",
    "gradients",
    "load_flat_parameters",
    "load_starting_weights",
    "misfit",
    "parameter_count",
    "parse_model_spec",
    "parse_prefixes",
    "split",
    "trainable",
]
