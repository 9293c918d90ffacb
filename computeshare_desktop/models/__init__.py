"""Model registry: build models by name and move their weights as flat float32 vectors."""

from computeshare_desktop.models.flat import (
    fingerprint,
    flat_gradients,
    flat_parameters,
    load_flat_parameters,
    parameter_count,
)
from computeshare_desktop.models.registry import MODELS, build_model

__all__ = [
    "MODELS",
    "build_model",
    "fingerprint",
    "flat_gradients",
    "flat_parameters",
    "load_flat_parameters",
    "parameter_count",
]
