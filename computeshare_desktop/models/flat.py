"""Architecture fingerprints, and the model's trainable parameters as one flat vector.

The hub and every worker agree on one vector layout: the parameters that require a
gradient, in ``model.parameters()`` order (shared ones once). Frozen parameters (a
fine-tuned backbone) never travel: they are part of the architecture, built the same on
both sides. Everything that flattens or fills parameters goes through this module, so
the hub's weights, a worker's gradient and a test's reference cannot disagree on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

FINGERPRINT_HEX_CHARS = 16


def fingerprint(model: nn.Module) -> str:
    """Return 16 hex chars of sha256 over the ordered (name, shape, dtype) of the state dict."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(f"{name}|{tuple(tensor.shape)}|{tensor.dtype}\n".encode())
    return digest.hexdigest()[:FINGERPRINT_HEX_CHARS]


def trainable(model: nn.Module) -> list[nn.Parameter]:
    """The parameters that travel: those that require a gradient, in order."""
    return [p for p in model.parameters() if p.requires_grad]


def parameter_count(model: nn.Module) -> int:
    """The number of trainable scalars (shared parameters counted once): the vector's size."""
    return sum(p.numel() for p in trainable(model))


def flatten(params: Sequence[torch.Tensor]) -> torch.Tensor:
    """A new 1-D float32 tensor of ``params``, on their device."""
    if not params:
        return torch.zeros(0, dtype=torch.float32)
    return parameters_to_vector(params).detach().to(torch.float32)


def flat_parameters(model: nn.Module) -> torch.Tensor:
    """A 1-D float32 CPU copy of the trainable parameters."""
    return flatten(trainable(model)).to("cpu")


def flat_gradients(model: nn.Module) -> torch.Tensor:
    """A 1-D float32 CPU concat of every trainable parameter's gradient (zeros where None)."""
    return gradients(trainable(model)).to("cpu")


def gradients(params: Sequence[torch.Tensor]) -> torch.Tensor:
    """The gradients of ``params`` as one vector on their device (zeros where None)."""
    return flatten([p.grad if p.grad is not None else torch.zeros_like(p) for p in params])


def _check_size(flat: torch.Tensor, params: Sequence[torch.Tensor]) -> None:
    expected = sum(p.numel() for p in params)
    if flat.dim() != 1 or flat.numel() != expected:
        raise ValueError(f"flat vector has shape {tuple(flat.shape)}, model needs ({expected},)")


def load_flat_parameters(model: nn.Module, flat: torch.Tensor) -> None:
    """Copy a flat vector (as made by ``flat_parameters``) into the trainable parameters.

    Raises:
        ValueError: ``flat`` is not 1-D or its size differs from the parameter count.
    """
    params = trainable(model)
    _check_size(flat, params)
    with torch.no_grad():
        for p, chunk in zip(params, split(flat, params), strict=True):
            p.copy_(chunk.to(device=p.device, dtype=p.dtype))


def adopt(params: Sequence[torch.Tensor], flat: torch.Tensor) -> None:
    """Make ``params`` views of ``flat`` (no copy: ``flat`` becomes the weights' storage,
    so the caller hands over a vector it will not use again).

    Raises:
        ValueError: ``flat`` is not 1-D or its size differs from the parameters'.
    """
    _check_size(flat, params)
    with torch.no_grad():
        vector_to_parameters(flat, params)


def split(flat: torch.Tensor, params: Sequence[torch.Tensor]) -> Iterator[torch.Tensor]:
    """Views of ``flat``, one per parameter, each shaped like it (no copies)."""
    offset = 0
    for p in params:
        n = p.numel()
        yield flat[offset:offset + n].view_as(p)
        offset += n
