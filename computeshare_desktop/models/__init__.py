"""Model registry: build models by name and move their weights as flat float32 vectors."""

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
from computeshare_desktop.models.registry import MODELS, build_model

__all__ = [
    "MODELS",
    "adopt",
    "build_model",
    "fingerprint",
    "flat_gradients",
    "flat_parameters",
    "flatten",
    "gradients",
    "load_flat_parameters",
    "parameter_count",
    "split",
    "trainable",
]
