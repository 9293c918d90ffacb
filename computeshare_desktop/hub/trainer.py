"""The global model, its optimizer, and the weights as the workers hold them.

Two kinds of update arrive from the rounds:

* a gradient (synchronous mode): SGD with momentum, ``lr = base_lr * samples / batch_size``
  (the linear scaling rule: the step follows the global batch);
* a weight change after local steps: the outer optimizer of DiLoCo (Douillard et al. 2023)
  treats it as a pseudo-gradient. "sgd" is SGD with momentum at lr 1: with one local step
  of plain SGD at the round's lr, that is exactly the synchronous step. "nesterov" is SGD
  with Nesterov momentum at ``outer_lr``.

With top-k pushes the momentum moves to the workers instead, as in Deep Gradient
Compression (Lin et al. 2018): each worker accumulates its own velocity and sparsifies
that, and the hub only averages. A hub-side momentum would turn the sparse average into a
dense step, which a sparse download could then only follow with a lag.

After each step the new weights are *published*: the delta from the previously published
weights is encoded once and shared by every worker's download (see ``codec.delta``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..codec import Codec, get_codec
from ..codec.delta import FULL, apply_delta, make_delta, weights_check
from ..models import flatten, parameter_count, split, trainable
from .config import HubConfig
from .presets import Mode


@dataclass(frozen=True, slots=True)
class Payload:
    """An encoded model download: whole (base FULL) or a delta from version ``base``."""

    version: int
    base: int
    codec: str
    data: bytes
    check: str


class Publisher:
    """The published weights of the latest version and the one delta that reached them."""

    def __init__(self, flat: torch.Tensor, version: int, codec: Codec) -> None:
        self.codec = codec  # of deltas; whole models always travel losslessly
        self.weights = flat.detach().clone()
        self.version = version
        self.check = weights_check(self.weights)
        self._delta: Payload | None = None
        self._full: Payload | None = None

    def publish(self, target: torch.Tensor, version: int) -> None:
        """Publish ``version``, as close to ``target`` as the codec gets."""
        data = make_delta(self.codec, self.weights, target)
        self.weights = apply_delta(self.codec, self.weights, data)  # as every worker will
        base, self.version = self.version, version
        self.check = weights_check(self.weights)
        self._delta = Payload(version, base, self.codec.id.value, data, self.check)
        self._full = None

    def payload(self, have: int) -> Payload:
        """What a worker holding version ``have`` (-1: nothing) downloads."""
        if self._delta is not None and have == self._delta.base:
            return self._delta
        if self._full is None or self._full.version != self.version:
            self._full = Payload(self.version, FULL, self.full_codec.id.value,
                                 self.full_codec.encode(self.weights), self.check)
        return self._full

    @property
    def full_codec(self) -> Codec:
        """Whole models: the delta codec when lossless, else zstd (lossless)."""
        return self.codec if self.codec.lossless else get_codec("zstd")


class ParameterServer:
    """Holds the global model, applies averaged updates, publishes each version."""

    def __init__(self, model: torch.nn.Module, *, base_lr: float, momentum: float,
                 mode: Mode, outer: str = "sgd", outer_lr: float = 0.7, batch_size: int = 1,
                 workers: int = 1, version: int = 0, weight_decay: float = 0.0) -> None:
        self.model = model.cpu().float()
        self.params = trainable(self.model)
        self.numel = parameter_count(self.model)
        self.base_lr = base_lr
        self.batch_size = batch_size
        self.momentum = momentum
        self.workers = workers
        self.worker_momentum = 0.0  # momentum the workers keep (top-k); 0: the hub keeps it
        self.optimizer = torch.optim.SGD(self.params, lr=base_lr, momentum=momentum,
                                         weight_decay=weight_decay)
        self.version = version
        self.published = Publisher(self.flat(), version, get_codec("zstd"))
        self.mode, self.outer, self.outer_lr = mode, outer, outer_lr
        self.set_mode(mode, outer, outer_lr)

    @classmethod
    def for_session(cls, model: torch.nn.Module, config: HubConfig) -> ParameterServer:
        """The server a session with ``config`` trains ``model`` with."""
        return cls(model, base_lr=config.lr, momentum=config.momentum, mode=config.mode,
                   outer=config.outer_for(config.local_steps), outer_lr=config.outer_lr,
                   batch_size=config.batch_size, workers=config.workers,
                   weight_decay=config.weight_decay)

    @property
    def local_steps(self) -> int:
        return self.mode.local_steps

    def set_mode(self, mode: Mode, outer: str, outer_lr: float) -> None:
        """Switch how updates travel and step (from the next version on).

        Momentum is kept in the units of the updates (a gradient, or a weight change) and
        in one place (here, or on the workers for top-k). When either changes, it starts
        afresh.
        """
        sparse = get_codec(mode.codec).sparse
        if (mode.local_steps > 0) != (self.mode.local_steps > 0) or \
                sparse != get_codec(self.mode.codec).sparse:
            self.optimizer.state.clear()
        self.mode, self.outer = mode, outer
        self.worker_momentum = self.momentum if sparse else 0.0
        hub_momentum = 0.0 if sparse else self.momentum
        nesterov = mode.local_steps > 0 and outer == "nesterov" and hub_momentum > 0
        self.outer_lr = outer_lr if nesterov else 1.0
        for group in self.optimizer.param_groups:
            group["momentum"], group["nesterov"] = hub_momentum, nesterov
        self._download(mode.topk)

    def _download(self, topk: float) -> None:
        """The codec of the next deltas. A sparse one must carry what every worker's sparse
        push changed: N times their fraction."""
        codec = get_codec(self.mode.codec)
        fraction = min(1.0, topk * (self.workers if codec.sparse else 1))
        self.published.codec = codec.configured(fraction=fraction)

    def lr_for(self, samples: int) -> float:
        """The learning rate of a step over ``samples`` samples (the linear scaling rule)."""
        return self.base_lr * samples / self.batch_size

    def step(self, update: torch.Tensor, samples: int, steps: int = 1,
             topk: float | None = None, scale: float = 1.0) -> None:
        """Apply one averaged update of ``steps`` steps over ``samples`` samples a step;
        the version advances by ``steps``; publish it (``topk``: the round's fraction;
        ``scale``: a factor on the learning rate, for stale async updates)."""
        for p, part in zip(self.params, split(update, self.params), strict=True):
            p.grad = part  # the update is ours: no copy
        lr = scale * (self.outer_lr if self.local_steps else self.lr_for(samples))
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.version += steps
        if topk is not None:
            self._download(topk)
        self.published.publish(self.flat(), self.version)

    def flat(self) -> torch.Tensor:
        """A copy of the weights as one flat float32 vector."""
        return flatten(self.params)  # a new tensor (cat)

    def payload(self, have: int) -> Payload:
        """The download for a worker that holds version ``have`` (see Publisher.payload)."""
        return self.published.payload(have)

    def state(self) -> dict[str, object]:
        """What a checkpoint needs to resume bit for bit."""
        buffers = [self.optimizer.state.get(p, {}).get("momentum_buffer") for p in self.params]
        return {"version": self.version, "model": self.model.state_dict(),
                "momentum": [b if b is not None else torch.zeros(0) for b in buffers]}

    def restore(self, state: dict[str, object]) -> None:
        """Inverse of ``state``; the restored weights are published whole."""
        model: Any = state["model"]
        momentum: Any = state["momentum"]
        self.model.load_state_dict(model)
        for p, buf in zip(self.params, momentum, strict=True):
            if buf.numel():
                self.optimizer.state[p]["momentum_buffer"] = buf.clone()
        self.version = int(state["version"])  # type: ignore[call-overload]
        self.published = Publisher(self.flat(), self.version, self.published.codec)
