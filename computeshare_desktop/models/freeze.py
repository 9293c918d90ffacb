"""``--train-only PREFIX[,PREFIX]``: train some parameters, freeze the rest.

Frozen parameters never travel (``flat.trainable`` leaves them out of the flat vector the
hub and the workers exchange); they stay as built or loaded. A prefix matches on module
boundaries: ``fc`` is ``fc.weight`` and ``fc.bias``, never ``fcx.weight``.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import nn

from computeshare_desktop.errors import ConfigError


def parse_prefixes(text: str) -> tuple[str, ...]:
    """``"fc, layer4."`` -> ``("fc", "layer4")``.

    Raises:
        ConfigError: no prefix in ``text``.
    """
    prefixes = tuple(p.strip().strip(".") for p in text.split(","))
    if not all(prefixes):
        raise ConfigError(f"--train-only {text!r}: give module names separated by commas, "
                          f"e.g. fc or layer4,fc")
    return prefixes


def freeze_except(model: nn.Module, prefixes: Iterable[str]) -> list[str]:
    """Freeze every parameter outside ``prefixes``; return the names of those frozen
    (parameters already frozen by the model itself stay frozen and are not listed).

    Raises:
        ConfigError: a prefix matches no parameter (the message lists the model's
            top-level names that hold parameters).
    """
    wanted = tuple(p.strip(".") for p in prefixes)
    if not wanted or not all(wanted):
        raise ConfigError(f"--train-only needs module names, got {list(wanted)}")
    named = list(model.named_parameters())
    for prefix in wanted:
        if not any(_under(name, prefix) for name, _ in named):
            raise ConfigError(f"--train-only {prefix!r} matches no parameter of the model; "
                              f"its top-level parts with parameters: {_top_level(named)}")
    frozen = []
    for name, parameter in named:
        if parameter.requires_grad and not any(_under(name, p) for p in wanted):
            parameter.requires_grad_(False)
            frozen.append(name)
    return frozen


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _top_level(named: list[tuple[str, nn.Parameter]]) -> str:
    return ", ".join(dict.fromkeys(name.split(".", 1)[0] for name, _ in named))
