"""Choosing a device (CUDA, then Apple MPS, then the CPU) and the precision it computes in.

A device counts only after one real forward and backward pass on it: torch can report an
accelerator that is not usable (a CUDA build on a machine without a GPU, a driver too old,
an MPS op missing), and a worker that fails on its first round helps nobody. Workers train
on the device ``pick_device`` chooses; the hub evaluates on it.

The precision is the session's (``--precision``), resolved by each machine for its own
device (``precision_for``): ``auto`` is bf16 autocast on a GPU with native bf16, else fp32;
a CPU computes in fp32 unless bf16 is asked for by name. Weights, gradients and what
travels stay float32 whatever the precision: autocast only lowers the forward's matmuls and
convolutions, and fp16's small range is guarded by a loss scaler (``torch.amp.GradScaler``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from typing import ContextManager

import torch

from .defaults import DEVICE_CHOICES
from .errors import ConfigError

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


# ----------------------------------------------------------------- precision
# The precisions a device computes in (names, not codecs: never compared with those).
FP32, BF16, FP16 = "fp32", "bf16", "fp16"
DTYPES = {BF16: torch.bfloat16, FP16: torch.float16}  # autocast's, by precision name


@dataclass(frozen=True, slots=True)
class Precision:
    """How one device computes forward and backward passes."""

    name: str  # "fp32", "bf16" or "fp16": what it resolved to
    device_type: str  # "cpu", "cuda", "mps"
    note: str = ""  # set when it differs from what the session asked for

    @property
    def dtype(self) -> torch.dtype | None:
        """Autocast's dtype; None for plain fp32."""
        return DTYPES.get(self.name)

    def autocast(self) -> ContextManager[object]:
        """The context the forward pass runs in (nothing for fp32)."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def scaler(self) -> torch.amp.GradScaler | None:
        """A loss scaler for fp16 (its gradients underflow without one); None otherwise."""
        return torch.amp.GradScaler(self.device_type) if self.name == FP16 else None


def choose_precision(requested: str, device_type: str, *, bf16: bool) -> tuple[str, str]:
    """The precision a ``device_type`` device computes in when the session asks for
    ``requested`` (``bf16``: the device has bf16), and a note when that is not what was
    asked. Pure: ``precision_for`` asks the device.

    ``auto``: bf16 on a GPU (CUDA, MPS) that has it, else fp32; the CPU stays fp32.
    ``bf16``: wherever the device has it (CPUs do). ``fp16``: GPUs only (with a scaler).
    """
    gpu = device_type in ("cuda", "mps")
    if requested == "auto":
        return (BF16 if gpu and bf16 else FP32), ""
    if requested == BF16 and not bf16:
        return FP32, f"{device_type} has no bf16: computing in fp32"
    if requested == FP16 and not gpu:
        return FP32, f"fp16 is for GPUs: the {device_type} computes in fp32"
    if requested in (FP32, BF16, FP16):
        return requested, ""
    raise ConfigError(f"unknown precision {requested!r}")


def has_bf16(device: torch.device) -> bool:
    """True when ``device`` computes in bf16 natively (CUDA from Ampere on, MPS from macOS
    14, every CPU)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    if device.type == "mps":
        backend = getattr(torch.backends, "mps", None)
        return bool(backend and backend.is_macos_or_newer(14, 0))
    return device.type == "cpu"


def precision_for(requested: str, device: torch.device) -> Precision:
    """The precision this machine's ``device`` computes in for the session's choice."""
    name, note = choose_precision(requested, device.type, bf16=has_bf16(device))
    if note:
        log.warning("%s", note)
    return Precision(name, device.type, note)
