"""One model through a session's whole path, compared with the same step on the original.

``through_session`` is what the hub and a worker do with a model, in order: the hub ships
it (``hub/user_model.ship_model``: export, then the workers' own acceptance run on the
bytes it serves); a worker accepts those parts (``graph/contract.accept_parts``, as
``worker/compute.GraphFactory.check`` calls it), takes the hub's flat vector and takes one
training step (cross-entropy, the worker's loss). The original module takes the same step
from the same weights, its dropout drawn from the same seed. The result is one of:

- ``equal``: the losses, every gradient and every buffer after the step (BatchNorm's
  running statistics, the model's own buffers) agree within ``TOLERANCE``;
- ``refused``: the hub refused the model before any session could open (``detail``: its
  message, which the caller checks names the layer and a way out);
- ``differs``: it went through, but the step does not match (``detail``: where, by how much).

Shared by the zoo tests (tests/graph/test_model_zoo*.py) and ``scripts/model_zoo.py``.
Memory: the worker's module is freed before the original takes its step, so a model's
weights exist at most three times at once (the original, its gradients, one more).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from computeshare_desktop.data import ArrayDataset, normalize
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.graph.contract import accept_parts
from computeshare_desktop.hub.config import HubConfig
from computeshare_desktop.hub.user_model import ship_model
from computeshare_desktop.models import flat

Outcome = Literal["equal", "refused", "differs"]
# Relative to the larger of the two tensors' largest magnitude (and never below ATOL):
# a decomposed kernel sums in another order than the fused eager one, so the last bits
# differ, more so in deep networks; a real fault is off by far more.
TOLERANCE = 1e-4
ATOL = 1e-6


@dataclass(frozen=True, slots=True)
class Result:
    """What became of one model."""

    name: str
    outcome: Outcome
    detail: str  # the refusal, the first difference, or the largest relative error
    parameters: int  # trainable scalars
    ops: int  # the shipped graph's op count (0: refused)
    seconds: float

    def row(self) -> dict[str, object]:
        return {"name": self.name, "outcome": self.outcome, "detail": self.detail,
                "parameters": self.parameters, "ops": self.ops,
                "seconds": round(self.seconds, 1)}


@dataclass(slots=True)
class Step:
    """One training step's results: the loss, the gradients and buffers by name."""

    loss: torch.Tensor
    grads: dict[str, torch.Tensor]
    buffers: dict[str, torch.Tensor]


def through_session(name: str, model: nn.Module, config: HubConfig, train_set: ArrayDataset,
                    *, batch: int = 3, seed: int = 0) -> Result:
    """``model`` (built as the hub builds ``config.model``) shipped, accepted by a worker
    and stepped once on the first ``batch`` training samples, against the original."""
    began = time.perf_counter()
    count = flat.parameter_count(model)
    try:
        session = ship_model(model, config, train_set)
    except ConfigError as refused:
        return Result(name, "refused", str(refused), count, 0,
                      time.perf_counter() - began)
    gc.collect()  # the hub's check rebuilt the graph, its weights held in fx's cycles
    assert session.graph is not None, "a model shipped by name proves nothing here"
    x = normalize(train_set.images[:batch], train_set.info)
    y = train_set.labels[:batch]
    accepted = accept_parts(session.graph.parts, hub_torch=torch.__version__,
                            fingerprint=session.fingerprint)
    accepted.model.load_flat(flat.flat_parameters(model))
    names = list(session.graph.manifest.trainable)
    ops = session.graph.manifest.op_count
    worker = take_step(accepted.model.module, dict(zip(names, accepted.model.parameters,
                                                       strict=True)), x, y, seed)
    del accepted, session
    gc.collect()  # the worker's copy goes before the original's gradients come
    hub = take_step(model, dict(model.named_parameters()), x, y, seed, only=names)
    agree, detail = compare(hub, worker)
    return Result(name, "equal" if agree else "differs", detail, count, ops,
                  time.perf_counter() - began)


def take_step(module: nn.Module, params: dict[str, nn.Parameter], x: torch.Tensor,
              y: torch.Tensor, seed: int, only: list[str] | None = None) -> Step:
    """One forward and backward of the worker's loss, dropout drawn from ``seed``; the
    gradients are moved out of the parameters (which keep none)."""
    chosen = only if only is not None else list(params)
    for p in params.values():
        p.grad = None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        loss = F.cross_entropy(module(x).float(), y)
        loss.backward()
    grads = {}
    for n in chosen:
        grad, params[n].grad = params[n].grad, None
        grads[n] = grad if grad is not None else torch.zeros_like(params[n])
    buffers = {n: b.detach().clone() for n, b in module.named_buffers()}
    return Step(loss.detach(), grads, buffers)


def compare(hub: Step, worker: Step) -> tuple[bool, str]:
    """Whether the two steps agree, and the largest relative error (or the first
    difference)."""
    worst = _relative(hub.loss, worker.loss)
    if worst > TOLERANCE:
        return False, f"loss {float(hub.loss):.6g} here, {float(worker.loss):.6g} on the worker"
    if hub.grads.keys() != worker.grads.keys():
        return False, "the trainable parameters differ"
    missing = sorted(hub.buffers.keys() - worker.buffers.keys())
    if missing:
        return False, f"buffers missing on the worker: {missing[:3]}"
    for kind, name, mine, theirs in _pairs(hub, worker):
        if mine.shape != theirs.shape:
            return False, f"{kind} {name}: {tuple(mine.shape)} here, {tuple(theirs.shape)}"
        error = _relative(mine, theirs)
        if error > TOLERANCE:
            return False, f"{kind} {name}: relative error {error:.2g}"
        worst = max(worst, error)
    return True, f"max relative error {worst:.1e}"


def _pairs(hub: Step, worker: Step) -> Iterator[tuple[str, str, torch.Tensor, torch.Tensor]]:
    for name, grad in hub.grads.items():
        yield "gradient", name, grad, worker.grads[name]
    for name, buffer in hub.buffers.items():
        yield "buffer", name, buffer, worker.buffers[name]


def _relative(mine: torch.Tensor, theirs: torch.Tensor) -> float:
    """The largest difference, relative to the larger tensor's largest magnitude."""
    if mine.numel() == 0:
        return 0.0
    a, b = mine.detach().float(), theirs.detach().float()
    scale = max(float(a.abs().max()), float(b.abs().max()), ATOL / TOLERANCE)
    return float(torch.sub(a, b).abs_().max()) / scale  # one temporary, not two
