"""The global model, its optimizer, and the weights as the workers hold them.

Two kinds of update arrive from the rounds:

* a gradient (synchronous or asynchronous mode), stepped by the session's optimizer:

  - SGD with momentum at ``lr = base_lr * samples / batch_size`` (the linear scaling rule,
    Goyal et al. 2017: the step follows the global batch);
  - AdamW (Loshchilov & Hutter 2019: weight decay decoupled from the adaptive step) at
    ``lr = base_lr * sqrt(samples / batch_size)``, the square-root rule. Adam divides the
    step by the gradient's running RMS, so its size no longer grows with the gradient's
    signal as SGD's does: a k-times larger batch cuts the gradient noise's variance k
    times, and the rate that keeps Adam's dynamics grows by sqrt(k) (Malladi et al. 2022,
    "On the SDEs and Scaling Rules for Adaptive Gradient Algorithms"; linear scaling
    would overshoot from a few workers on). In both, ``--lr`` is the rate for one
    worker's batch, as it would be training alone, and a round that closed with fewer
    workers takes a smaller step.

* a weight change after local steps: the outer optimizer of DiLoCo (Douillard et al. 2023)
  treats it as a pseudo-gradient. "sgd" is SGD with momentum at lr 1: with one local step
  of plain SGD at the round's lr, that is exactly the synchronous step. "nesterov" is SGD
  with Nesterov momentum at ``outer_lr``. The workers' inner optimizer is the session's:
  plain SGD at the round's (linearly scaled) lr, or AdamW at the base rate unscaled (each
  worker steps on its own batch, the batch ``--lr`` is given for), whose state each worker
  keeps from round to round. With AdamW the weight decay is the inner optimizer's; the
  outer step has none.

The schedule (``lr_schedule``) multiplies every rate by the factor of the version its step
(or round) starts at; the outer rate of local steps stays as it is, since the inner rate,
and so the pseudo-gradient, already follows the schedule (as in DiLoCo). With
``clip_grad``, an averaged gradient's global norm is clipped before the step; local steps
are clipped on the workers, step by step.

With top-k pushes and SGD, the momentum moves to the workers instead, as in Deep Gradient
Compression (Lin et al. 2018): each worker accumulates its own velocity and sparsifies
that, and the hub only averages. A hub-side momentum would turn the sparse average into a
dense step, which a sparse download could then only follow with a lag. With AdamW the
workers keep no velocity: for gradients, AdamW's moments are the hub's optimizer itself,
so the hub keeps them whatever the codec (the workers push plain sparse gradients with
error feedback, and the dense step reaches them through the sparse downloads with that
lag); with local steps the moments are the workers' inner AdamW's, and the outer step
only averages, so that the sparse average stays sparse.

After each step the new weights are *published*: the delta from the previously published
weights is encoded once and shared by every worker's download (see ``codec.delta``).

A model shipped as a graph also has running statistics (BatchNorm's running mean and
variance: ``track``). They are not trained: each worker's forward passes move its copy,
and a push carries the change over its work. The step adds the round's combined change
(the sample-weighted mean in synchronous rounds, so that the hub's statistics are the
sample-weighted mean of the workers'; one update's change in async mode), and every model
download carries the hub's statistics whole, so each round starts from them. The step
counters (``num_batches_tracked``) advance by the version's steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from ..codec import Codec, get_codec
from ..codec.delta import FULL, apply_delta, make_delta, weights_check
from ..errors import ConfigError
from ..models import flatten, misfit, parameter_count, split, trainable
from ..protocol.graphs import stats_frame as encode_stats
from .config import OPTIMIZERS, HubConfig
from .lr_schedule import STEADY, LrSchedule
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
                 workers: int = 1, version: int = 0, weight_decay: float = 0.0,
                 optimizer: str = "sgd", schedule: LrSchedule | None = None,
                 clip_grad: float = 0.0) -> None:
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {optimizer!r}")
        self.model = model.cpu().float()
        self.params = trainable(self.model)
        self.numel = parameter_count(self.model)
        self.base_lr = base_lr
        self.batch_size = batch_size
        self.momentum = momentum
        self.workers = workers
        self.kind = optimizer  # "sgd" or "adamw"
        self.weight_decay = weight_decay
        self.schedule = schedule if schedule is not None else STEADY
        self.clip_grad = clip_grad  # 0: off
        self.worker_momentum = 0.0  # momentum the workers keep (top-k); 0: the hub keeps it
        # SGD steps gradients (with "sgd") and every outer step of local steps.
        self.sgd = torch.optim.SGD(self.params, lr=base_lr, momentum=momentum,
                                   weight_decay=weight_decay)
        self.adamw = torch.optim.AdamW(  # torch's betas and eps, as the workers' inner one
            self.params, lr=base_lr, weight_decay=weight_decay) if optimizer == "adamw" else None
        self.version = version
        self.published = Publisher(self.flat(), version, get_codec("zstd"))
        self.mode, self.outer, self.outer_lr = mode, outer, outer_lr
        self.set_mode(mode, outer, outer_lr)
        self.stats: list[torch.Tensor] = []  # running statistics (see track)
        self.counters: list[torch.Tensor] = []
        self._stats_frame: tuple[int, bytes] = (-1, b"")  # (version, frame)

    @classmethod
    def for_session(cls, model: torch.nn.Module, config: HubConfig) -> ParameterServer:
        """The server a session with ``config`` trains ``model`` with."""
        return cls(model, base_lr=config.lr, momentum=config.momentum, mode=config.mode,
                   outer=config.outer_for(config.local_steps), outer_lr=config.outer_lr,
                   batch_size=config.batch_size, workers=config.workers,
                   weight_decay=config.weight_decay, optimizer=config.optimizer,
                   schedule=LrSchedule(config.schedule, config.warmup, config.rounds),
                   clip_grad=config.clip_grad)

    def track(self, stats: list[torch.Tensor], counters: list[torch.Tensor]) -> None:
        """Keep these buffers of the model as running statistics (float32, combined from
        the workers' changes and sent with each model) and step counters."""
        self.stats, self.counters = list(stats), list(counters)
        self._stats_frame = (-1, b"")

    @property
    def stats_numel(self) -> int:
        """Values in a statistics frame (0: the model has none that travel)."""
        return sum(t.numel() for t in self.stats)

    def stats_frame(self) -> bytes:
        """The current running statistics as raw float32, encoded once per version (empty
        when none travel)."""
        if not self.stats:
            return b""
        if self._stats_frame[0] != self.version:
            self._stats_frame = (self.version, encode_stats(flatten(self.stats)))
        return self._stats_frame[1]

    @property
    def local_steps(self) -> int:
        return self.mode.local_steps

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The optimizer of the next step: AdamW for gradients when the session chose it;
        SGD otherwise, and for every outer step of local steps."""
        if self.adamw is not None and not self.local_steps:
            return self.adamw
        return self.sgd

    def set_mode(self, mode: Mode, outer: str, outer_lr: float) -> None:
        """Switch how updates travel and step (from the next version on).

        Momentum is kept in the units of the updates (a gradient, or a weight change) and
        in one place (here, or on the workers for top-k with SGD). When either changes, it
        starts afresh, and so do AdamW's moments.
        """
        sparse = get_codec(mode.codec).sparse
        if (mode.local_steps > 0) != (self.mode.local_steps > 0) or \
                sparse != get_codec(self.mode.codec).sparse:
            for optimizer in (self.sgd, self.adamw):
                if optimizer is not None:
                    optimizer.state.clear()
        self.mode, self.outer = mode, outer
        on_workers = sparse and self.kind == "sgd"  # DGC's momentum correction
        self.worker_momentum = self.momentum if on_workers else 0.0
        # A sparse average stays sparse only without a momentum here: SGD's moves to the
        # workers, and AdamW's local steps carry theirs in the workers' inner AdamW.
        hub_momentum = 0.0 if sparse and (on_workers or mode.local_steps) else self.momentum
        nesterov = mode.local_steps > 0 and outer == "nesterov" and hub_momentum > 0
        self.outer_lr = outer_lr if nesterov else 1.0
        inner_decay = self.kind == "adamw" and mode.local_steps > 0  # the workers' AdamW's
        for group in self.sgd.param_groups:
            group["momentum"], group["nesterov"] = hub_momentum, nesterov
            group["weight_decay"] = 0.0 if inner_decay else self.weight_decay
        self._download(mode.topk)

    def _download(self, topk: float) -> None:
        """The codec of the next deltas. A sparse one must carry what every worker's sparse
        push changed: N times their fraction."""
        codec = get_codec(self.mode.codec)
        fraction = min(1.0, topk * (self.workers if codec.sparse else 1))
        self.published.codec = codec.configured(fraction=fraction)

    def lr_for(self, samples: int) -> float:
        """The learning rate of a step over ``samples`` samples that starts at the current
        version: the base rate scaled to the batch (SGD linearly, AdamW by the square root;
        AdamW's local steps not at all: each worker steps on its own batch), times the
        schedule's factor."""
        ratio = samples / self.batch_size
        if self.kind == "sgd":
            scale = ratio
        else:
            scale = 1.0 if self.local_steps else math.sqrt(ratio)
        return self.base_lr * scale * self.schedule.factor(self.version)

    def step(self, update: torch.Tensor, samples: int, steps: int = 1,
             topk: float | None = None, scale: float = 1.0,
             stats: torch.Tensor | None = None) -> None:
        """Apply one averaged update of ``steps`` steps over ``samples`` samples a step;
        the version advances by ``steps``; publish it (``topk``: the round's fraction;
        ``scale``: a factor on the learning rate, for stale async updates; ``stats``: the
        round's change of the running statistics)."""
        for p, part in zip(self.params, split(update, self.params), strict=True):
            p.grad = part  # the update is ours: no copy
        if self.clip_grad and not self.local_steps:  # scales the update in place
            torch.nn.utils.clip_grad_norm_(self.params, self.clip_grad)
        lr = scale * (self.outer_lr if self.local_steps else self.lr_for(samples))
        optimizer = self.optimizer
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self._step_stats(stats, steps)
        self.version += steps
        if topk is not None:
            self._download(topk)
        self.published.publish(self.flat(), self.version)

    def _step_stats(self, change: torch.Tensor | None, steps: int) -> None:
        with torch.no_grad():
            if change is not None and self.stats:
                for buffer, part in zip(self.stats, split(change, self.stats), strict=True):
                    buffer.add_(part)
            for counter in self.counters:
                counter.add_(steps)

    def flat(self) -> torch.Tensor:
        """A copy of the weights as one flat float32 vector."""
        return flatten(self.params)  # a new tensor (cat)

    def payload(self, have: int) -> Payload:
        """The download for a worker that holds version ``have`` (see Publisher.payload)."""
        return self.published.payload(have)

    def state(self) -> dict[str, object]:
        """What a checkpoint needs to resume bit for bit (AdamW's moments too)."""
        buffers = [self.sgd.state.get(p, {}).get("momentum_buffer") for p in self.params]
        state: dict[str, object] = {
            "version": self.version, "model": self.model.state_dict(),
            "momentum": [b if b is not None else torch.zeros(0) for b in buffers]}
        if self.adamw is not None:
            state["adamw"] = self.adamw.state_dict()["state"]  # by parameter index
        return state

    def restore(self, state: dict[str, object]) -> None:
        """Inverse of ``state``; the restored weights are published whole.

        Raises:
            ConfigError: the checkpoint's weights do not fit the model (the first keys
                named), as when its file was edited since.
        """
        model: Any = state["model"]
        momentum: Any = state["momentum"]
        wrong = misfit(model, self.model)
        if wrong:  # a model file edited since: said before anything of the session changes
            raise ConfigError(f"the checkpoint does not fit the session's model: {wrong} (the "
                              f"model changed since it was saved: put its file back as it "
                              f"was, or start a new session in another folder)")
        self.model.load_state_dict(model)
        for p, buf in zip(self.params, momentum, strict=True):
            if buf.numel():
                self.sgd.state[p]["momentum_buffer"] = buf.clone()
        moments: Any = state.get("adamw")
        if self.adamw is not None and moments:
            groups = self.adamw.state_dict()["param_groups"]
            own = {i: {k: v.clone() for k, v in slot.items()} for i, slot in moments.items()}
            self.adamw.load_state_dict({"state": own, "param_groups": groups})
        self.version = int(state["version"])  # type: ignore[call-overload]
        self.published = Publisher(self.flat(), self.version, self.published.codec)
        self._stats_frame = (-1, b"")
