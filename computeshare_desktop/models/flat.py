"""Architecture fingerprints and flat float32 views of parameters and gradients."""

from __future__ import annotations

import hashlib

import torch
from torch import nn

FINGERPRINT_HEX_CHARS = 16


def fingerprint(model: nn.Module) -> str:
    """Return 16 hex chars of sha256 over the ordered (name, shape, dtype) of the state dict."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(f"{name}|{tuple(tensor.shape)}|{tensor.dtype}\n".encode())
    return digest.hexdigest()[:FINGERPRINT_HEX_CHARS]


def parameter_count(model: nn.Module) -> int:
    """Return the number of scalar parameters (shared parameters counted once)."""
    return sum(p.numel() for p in model.parameters())


def flat_parameters(model: nn.Module) -> torch.Tensor:
    """Return a 1-D float32 CPU copy of all parameters, in ``named_parameters()`` order."""
    parts = [p.detach().reshape(-1).to("cpu", torch.float32) for p in model.parameters()]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float32)


def load_flat_parameters(model: nn.Module, flat: torch.Tensor) -> None:
    """Copy a flat vector (as made by ``flat_parameters``) into the model's parameters.

    Raises:
        ValueError: ``flat`` is not 1-D or its size differs from the parameter count.
    """
    expected = parameter_count(model)
    if flat.dim() != 1 or flat.numel() != expected:
        raise ValueError(f"flat vector has shape {tuple(flat.shape)}, model needs ({expected},)")
    offset = 0
    with torch.no_grad():
        for p in model.parameters():
            chunk = flat[offset : offset + p.numel()].reshape(p.shape)
            p.copy_(chunk.to(device=p.device, dtype=p.dtype))
            offset += p.numel()


def flat_gradients(model: nn.Module) -> torch.Tensor:
    """Return a 1-D float32 CPU concat of every ``p.grad`` (zeros where it is None)."""
    parts = [_flat_grad(p) for p in model.parameters()]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float32)


def _flat_grad(p: torch.Tensor) -> torch.Tensor:
    if p.grad is None:
        return torch.zeros(p.numel(), dtype=torch.float32)
    return p.grad.detach().reshape(-1).to("cpu", torch.float32)
