"""``build_model``: models by name, built on the CPU with seeded, reproducible weights."""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch
from torch import nn

from computeshare_desktop.data import DatasetInfo
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models.checks import refuse_table
from computeshare_desktop.models.nets import MLP, SimpleNet, resnet18

logger = logging.getLogger(__name__)

_BUILDERS: dict[str, Callable[[DatasetInfo], nn.Module]] = {
    "simplenet": SimpleNet,
    "mlp": MLP,
    "resnet18": resnet18,
}

MODELS: tuple[str, ...] = tuple(_BUILDERS)
TABLE_MODELS = frozenset({"mlp"})  # the built-ins that take a table's rows (N×F)


def build_model(name: str, info: DatasetInfo, *, seed: int | None = None) -> nn.Module:
    """Build a float32 CPU model for ``info``'s images and classes.

    With a seed, the weights depend on the seed alone (bitwise) and the global RNG state is
    left as it was; without one, the global RNG is used as usual.

    Raises:
        ConfigError: unknown model name, images too small for the model, or a table for
            a model of images (every one but mlp).
    """
    try:
        builder = _BUILDERS[name]
    except KeyError:
        raise ConfigError(f"unknown model {name!r}; known: {', '.join(MODELS)}") from None
    if name not in TABLE_MODELS:
        refuse_table(name, info)
    model = build_seeded(lambda: builder(info), seed)
    logger.debug("built %s for %s (seed=%s)", name, info.name, seed)
    return model


def build_seeded(make: Callable[[], nn.Module], seed: int | None) -> nn.Module:
    """``make()`` on the CPU, as float32; with a seed, the weights depend on the seed alone
    (bitwise) and the global RNG state is left as it was (FACTS: initial weights are made
    on the CPU from a seed and sent out, since devices do not agree bitwise)."""
    if seed is None:
        return _build_on_cpu(make)
    # fork_rng(devices=[]) restores only the CPU generator, so seed only that one:
    # torch.manual_seed would also reseed (and never restore) every CUDA generator.
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)
        return _build_on_cpu(make)


def _build_on_cpu(make: Callable[[], nn.Module]) -> nn.Module:
    # A global default device or dtype set by someone else must not leak into our weights.
    with torch.device("cpu"):
        model = make()
    return model.to(dtype=torch.float32)
