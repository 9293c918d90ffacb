"""Choosing the device a worker trains on: CUDA, then Apple MPS, then the CPU.

A device counts only after one real forward and backward pass on it: torch can report an
accelerator that is not usable (a CUDA build on a machine without a GPU, a driver too old,
an MPS op missing), and a worker that fails on its first round helps nobody.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import torch

from ..defaults import DEVICE_CHOICES
from ..errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeviceChoice:
    """The device a worker uses, and why."""

    device: torch.device
    description: str  # e.g. "NVIDIA GeForce RTX 4090 (CUDA)", "Apple MPS", "CPU, 8 cores"
    note: str = ""  # set when we fell back from what was asked or expected

    @property
    def short(self) -> str:
        """A few words for the device in a worker's name: "CPU", "Apple GPU", the GPU's
        model ("RTX 4090"), with its index on a machine with several."""
        if self.device.type == "cpu":
            return "CPU"
        if self.device.type == "mps":
            return "Apple GPU"
        model = self.description.removesuffix(" (CUDA)")
        for prefix in ("NVIDIA GeForce ", "NVIDIA "):
            model = model.removeprefix(prefix)
        return model if self.device.index in (None, 0) else f"{model} #{self.device.index}"


def _available(kind: str) -> bool:
    if kind == "cuda":
        return torch.cuda.is_available()
    if kind == "mps":
        backend = getattr(torch.backends, "mps", None)
        return bool(backend and backend.is_available())
    return kind == "cpu"


def describe(device: torch.device) -> str:
    """A human name for a device."""
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA)"
    if device.type == "mps":
        return "Apple MPS"
    return f"CPU, {os.cpu_count() or 1} cores"


def verify(device: torch.device) -> str | None:
    """Run a tiny conv net forward and backward on ``device``; the error text, or None."""
    try:
        gen = torch.Generator().manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.Flatten(),
                                  torch.nn.Linear(2 * 6 * 6, 3)).to(device)
        x = torch.rand(2, 1, 8, 8, generator=gen).to(device)
        loss = torch.nn.functional.cross_entropy(net(x), torch.tensor([0, 2], device=device))
        loss.backward()
        if not torch.isfinite(loss).item():
            return "non-finite result"
        return None
    except Exception as exc:  # any failure means "not usable", whatever the backend raised
        return f"{type(exc).__name__}: {exc}".splitlines()[0]


def pick_device(requested: str = "auto") -> DeviceChoice:
    """The best working device, or the one ``requested``; falls back to the CPU with a note."""
    if requested not in DEVICE_CHOICES:
        raise ConfigError(f"--device must be one of {', '.join(DEVICE_CHOICES)}")
    candidates = ["cuda", "mps"] if requested == "auto" else [requested]
    notes = []
    for kind in candidates:
        if kind == "cpu":
            break
        if not _available(kind):
            if requested != "auto":
                notes.append(f"{kind} is not available on this machine")
            continue
        device = torch.device(kind)
        error = verify(device)
        if error is None:
            return DeviceChoice(device, describe(device))
        notes.append(f"{kind} failed a test pass ({error})")
    note = "; ".join(notes) + ": using the CPU" if notes else ""
    if note:
        log.warning("%s", note)
    return DeviceChoice(torch.device("cpu"), describe(torch.device("cpu")), note)
