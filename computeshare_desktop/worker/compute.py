"""One worker's round: a gradient of one batch, or H local steps and their weight change.

The worker core never computes: it asks its driver to, through the ``Compute`` protocol,
and a ``ComputeFactory`` builds the compute for a session from its Welcome and shard. The
built-in models are one factory (``BuiltinFactory``: the model from the registry, checked
against the hub's fingerprint); a model the hub ships as a graph is another
(``GraphFactory``: the graph checked and rebuilt by ``graph.load_training_graph``, never
the hub's code), and ``ModelFactory`` picks between them as the Welcome says.

A graph's running statistics (BatchNorm's) start each round as the hub's (``load_stats``)
and their change over the work goes back with the update (``Update.stats``).

The session's recipe (recipe.py) shapes the work: the training loss's label smoothing, the
precision (autocast; fp16 behind a loss scaler), and for local steps the inner optimizer
(plain SGD as before, or AdamW, whose moments this compute keeps from round to round) and
each step's gradient clipping. Weights, gradients and weight changes stay float32.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

import torch

from ..data import DatasetInfo
from ..data.info import table_info
from ..devices import precision_for
from ..errors import RejectedError
from ..evaluation import batch_loss
from ..graph import GraphModel, GraphRefused
from ..graph.contract import accept_parts
from ..graph.inference import FixedMode
from ..models import adopt, build_model, fingerprint, flatten, gradients, split, trainable
from ..protocol import RejectCode
from ..protocol.messages import Welcome
from ..sampling import stream_positions
from .augment import Augmentation, batch_generator
from .graphs import ReceivedGraph
from .recipe import PLAIN, Recipe

SCALED_TRIES = 8  # fp16: a gradient that overflowed is computed again at a lower loss scale


@dataclass(frozen=True, slots=True)
class Update:
    """What one round of work produced, on the CPU."""

    flat: torch.Tensor  # the gradient, or the weight change (start - end) of local steps
    loss: float  # mean training loss over the batches
    samples: int  # all steps together
    seconds: float  # compute time, weight loading included
    stats: torch.Tensor | None = None  # the change of the running statistics (graphs)


class Compute(Protocol):
    """What a worker computes with: a session's model and shard on one device."""

    @property
    def numel(self) -> int:
        """Values in the flat weight vector."""
        ...

    @property
    def device(self) -> torch.device:
        """Where local steps (and their velocity) run."""
        ...

    def gradient(self, weights: torch.Tensor, start: int, batch: int) -> Update: ...

    def local_steps(self, weights: torch.Tensor, start: int, batch: int, steps: int,
                    lr: float, *, momentum: float = 0.0,
                    velocity: torch.Tensor | None = None) -> Update: ...

    def load_stats(self, stats: torch.Tensor) -> None:
        """Set the running statistics to the hub's before the work (called only for a
        model whose statistics travel)."""
        ...


class ComputeFactory(Protocol):
    """Builds the compute of a session."""

    def check(self, welcome: Welcome, graph: ReceivedGraph | None = None) -> None:
        """Raise RejectedError(ARCH_MISMATCH) when this machine cannot compute the
        session's model, GraphRefused when it refuses the hub's ``graph`` (called before
        the shard is downloaded)."""
        ...

    def build(self, welcome: Welcome, images: torch.Tensor, labels: torch.Tensor) -> Compute:
        """The compute for the session, holding its shard."""
        ...


def welcome_info(welcome: Welcome) -> DatasetInfo:
    """The session's data as the hub describes it in the Welcome (never a registry's by
    name: the hub may train on data this machine has never heard of).

    Raises:
        RejectedError(MALFORMED): the shape does not hold together (a count per channel).
    """
    try:
        if welcome.data_kind == "table":  # rows standardized by the hub: no statistics
            return table_info(welcome.dataset, welcome.features, welcome.num_classes)
        return DatasetInfo(welcome.dataset, welcome.channels, welcome.height, welcome.width,
                           welcome.num_classes, tuple(welcome.mean), tuple(welcome.std))
    except ValueError as exc:
        raise RejectedError(RejectCode.MALFORMED, f"the hub described its data wrongly: "
                                                  f"{exc}") from None


class BuiltinFactory:
    """Models from the registry, on one device: the hub's fingerprint must match ours."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._checked: tuple[Welcome, torch.nn.Module] | None = None  # built by check()

    def check(self, welcome: Welcome, graph: ReceivedGraph | None = None) -> None:
        model = build_model(welcome.model, welcome_info(welcome))
        if fingerprint(model) != welcome.fingerprint:
            raise RejectedError(RejectCode.ARCH_MISMATCH,
                                "this machine builds a different model: update ComputeShare")
        self._checked = (welcome, model)

    def build(self, welcome: Welcome, images: torch.Tensor,
              labels: torch.Tensor) -> GradientComputer:
        if self._checked is None or self._checked[0] is not welcome:
            self.check(welcome)
        assert self._checked is not None
        model, self._checked = self._checked[1], None
        return GradientComputer(model, welcome_info(welcome), self.device, images, labels,
                                shard=welcome.shard, seed=welcome.seed,
                                recipe=Recipe.of(welcome))


class GraphFactory:
    """A model the hub ships as a graph: checked and rebuilt here by the hub's own contract
    (``graph.accept_parts``: an allow-list of ops, a strict schema, no pickle, no code,
    every shape checked with this worker's rules before anything runs, memory bounded by
    the manifest), on one device. Any failure is a GraphRefused the hub hears."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._checked: tuple[Welcome, GraphModel, list[torch.Tensor]] | None = None

    def check(self, welcome: Welcome, graph: ReceivedGraph | None = None) -> None:
        if graph is None:
            raise GraphRefused("the hub sent no graph for its model")
        accepted = accept_parts(graph.parts, hub_torch=welcome.torch,
                                fingerprint=welcome.fingerprint, device=self.device)
        model, stats = accepted.model, accepted.stats
        self._checked = (welcome, model, stats)

    def build(self, welcome: Welcome, images: torch.Tensor,
              labels: torch.Tensor) -> GradientComputer:
        if self._checked is None or self._checked[0] is not welcome:
            raise GraphRefused("the graph was not checked for this session")
        _, model, stats = self._checked
        self._checked = None
        # The program's train mode is fixed: FixedMode's train() only sets the flag.
        return GradientComputer(FixedMode(model.module), welcome_info(welcome),
                                self.device, images, labels, shard=welcome.shard,
                                seed=welcome.seed, recipe=Recipe.of(welcome),
                                params=model.parameters, stats=stats)


class ModelFactory:
    """What a worker computes with by default: the registry's built-ins by name, the
    hub's graphs checked, as the Welcome's ``compute`` says."""

    def __init__(self, device: torch.device) -> None:
        self.builtin = BuiltinFactory(device)
        self.graph = GraphFactory(device)

    def _for(self, welcome: Welcome) -> BuiltinFactory | GraphFactory:
        return self.graph if welcome.compute == "graph" else self.builtin

    def check(self, welcome: Welcome, graph: ReceivedGraph | None = None) -> None:
        welcome_info(welcome)  # data the hub describes wrongly: refused before the shard
        self._for(welcome).check(welcome, graph)

    def build(self, welcome: Welcome, images: torch.Tensor,
              labels: torch.Tensor) -> GradientComputer:
        return self._for(welcome).build(welcome, images, labels)


class GradientComputer:
    """Holds the model and the shard on the worker's device."""

    def __init__(self, model: torch.nn.Module, info: DatasetInfo, device: torch.device,
                 images: torch.Tensor, labels: torch.Tensor, *, shard: int,
                 seed: int, recipe: Recipe = PLAIN,
                 params: list[torch.nn.Parameter] | None = None,
                 stats: list[torch.Tensor] | None = None) -> None:
        """``params``: the trainable parameters in the flat vector's order (default: the
        model's that require a gradient); ``stats``: buffers that travel as running
        statistics (default: none)."""
        self.model = model.to(device).train()
        self.params = trainable(self.model) if params is None else list(params)
        self.numel = sum(p.numel() for p in self.params)
        self.stats = list(stats or [])
        self.info = info
        self.device = device
        self.images = images.to(device)
        self.labels = labels.to(device)
        self.shard = shard
        self.seed = seed
        self.recipe = recipe
        self.precision = precision_for(recipe.precision, device)
        self.augment = Augmentation(recipe.augment, info)  # before normalize, graphs too
        self.scaler = self.precision.scaler()
        # The loss scaler unscales through an optimizer over the parameters: gradients and
        # plain SGD steps have none of their own, so a holder that never steps stands in.
        self._holder = torch.optim.SGD(self.params, lr=0.0)
        self.adamw: torch.optim.AdamW | None = None  # the inner AdamW, kept across rounds
        self._stats_start: torch.Tensor | None = None  # the statistics the work began from

    def load_stats(self, stats: torch.Tensor) -> None:
        """The hub's running statistics, into the model's buffers."""
        with torch.no_grad():
            for buffer, part in zip(self.stats, split(stats.to(self.device), self.stats),
                                    strict=True):
                buffer.copy_(part)
        self._stats_start = stats

    def _stats_change(self) -> torch.Tensor | None:
        """How the work moved the running statistics (None: none travel)."""
        if not self.stats:
            return None
        now = flatten(self.stats).to("cpu", torch.float32)
        start = self._stats_start if self._stats_start is not None else now
        self._stats_start = None
        return now - start

    def _batch_loss(self, start: int, batch: int) -> torch.Tensor:
        """Forward and backward on one batch of the stream (the loss scaled for fp16)."""
        idx = stream_positions(len(self.labels), self.seed, self.shard, start, batch)
        idx = idx.to(self.device)
        images = self._augmented(idx, start)  # uint8, outside autocast
        self.model.zero_grad(set_to_none=False)
        with self.precision.autocast():
            loss = batch_loss(self.model, images, self.labels[idx], self.info,
                              label_smoothing=self.recipe.label_smoothing)
        (loss if self.scaler is None else self.scaler.scale(loss)).backward()
        return loss.detach()

    def _augmented(self, idx: torch.Tensor, start: int) -> torch.Tensor:
        """The batch's uint8 images, augmented as the recipe asks (seeded by its place)."""
        images = self.images[idx]
        if not self.augment:
            return images
        return self.augment(images, batch_generator(self.seed, self.shard, start))

    def _unscaled(self, optimizer: torch.optim.Optimizer) -> bool:
        """fp16: the gradients back to their true scale; False when they overflowed (the
        step is then skipped, and the scale lowered at the next ``scaler.update``)."""
        if self.scaler is None:
            return True
        self.scaler.unscale_(optimizer)
        grads = [p.grad for p in self.params if p.grad is not None]
        return bool(torch.stack([torch.isfinite(g).all() for g in grads]).all()) \
            if grads else True

    def _clip(self) -> None:
        """Clip this step's gradient to the recipe's global norm (local steps)."""
        if self.recipe.clip_grad:
            torch.nn.utils.clip_grad_norm_(self.params, self.recipe.clip_grad)

    def _load(self, weights: torch.Tensor) -> torch.Tensor:
        """Put ``weights`` into the model; returns them on the device.

        ``adopt`` makes the parameters views of the vector it is given, so the model gets
        its own copy: training must never write into the caller's weights (on the CPU,
        ``.to`` would not copy).
        """
        on_device = weights.to(self.device, torch.float32)
        adopt(self.params, on_device.clone())
        return on_device

    def gradient(self, weights: torch.Tensor, start: int, batch: int) -> Update:
        """The gradient at ``weights`` of samples ``[start, start + batch)`` of the stream."""
        began = time.perf_counter()
        self._load(weights)
        self.adamw = None  # gradients: the session left local steps, whose state starts anew
        for _ in range(SCALED_TRIES):
            loss = self._batch_loss(start, batch)
            finite = self._unscaled(self._holder)
            if self.scaler is not None:
                self.scaler.update()
            if finite:
                break  # (still not finite after the tries: the hub refuses it, NOT_FINITE)
        flat = gradients(self.params).to("cpu", torch.float32)
        return Update(flat, float(loss), batch, time.perf_counter() - began,
                      self._stats_change())

    def local_steps(self, weights: torch.Tensor, start: int, batch: int, steps: int,
                    lr: float, *, momentum: float = 0.0,
                    velocity: torch.Tensor | None = None) -> Update:
        """``steps`` steps of the recipe's inner optimizer at ``lr`` from ``weights``; the
        change of weights.

        Plain SGD by default: with one step the change is ``lr`` times the gradient, which
        is what makes one local step with an outer SGD reproduce synchronous training.
        With ``momentum``, ``velocity`` (a flat buffer on this device, updated in place)
        carries it from step to step and from round to round. AdamW (the recipe's choice)
        keeps its moments here from round to round, until the session switches to
        gradients or the worker joins again (a new compute).
        """
        began = time.perf_counter()
        start_weights = self._load(weights)
        adamw = self._inner_adamw(lr)
        losses = []
        for step in range(steps):
            losses.append(self._batch_loss(start + step * batch, batch))
            if adamw is not None:
                self._adamw_step(adamw)
            else:
                self._sgd_step(lr, momentum, velocity)
        with torch.no_grad():
            change = start_weights - flatten(self.params)
        loss = float(torch.stack(losses).mean()) if losses else 0.0
        return Update(change.to("cpu", torch.float32), loss, batch * steps,
                      time.perf_counter() - began, self._stats_change())

    def _inner_adamw(self, lr: float) -> torch.optim.AdamW | None:
        """The inner AdamW at ``lr`` (made at the first local steps), or None for SGD."""
        if self.recipe.optimizer != "adamw":
            return None
        if self.adamw is None:  # torch's betas and eps, as the hub's AdamW
            self.adamw = torch.optim.AdamW(self.params, lr=lr,
                                           weight_decay=self.recipe.weight_decay)
        for group in self.adamw.param_groups:
            group["lr"] = lr
        return self.adamw

    def _adamw_step(self, adamw: torch.optim.AdamW) -> None:
        if self.scaler is None:
            self._clip()
            adamw.step()
            return
        self.scaler.unscale_(adamw)
        self._clip()
        self.scaler.step(adamw)  # skipped when the gradients overflowed
        self.scaler.update()

    def _sgd_step(self, lr: float, momentum: float, velocity: torch.Tensor | None) -> None:
        """One plain SGD step (with the worker-side ``velocity`` when the hub asks)."""
        finite = self._unscaled(self._holder)
        self._clip()
        if finite:
            with torch.no_grad():
                kept: list[torch.Tensor | None] = [None] * len(self.params)
                if momentum and velocity is not None:  # per parameter: no flat copies
                    kept = list(split(velocity, self.params))
                for p, v in zip(self.params, kept, strict=True):
                    move = p.grad if p.grad is not None else torch.zeros_like(p)
                    if v is not None:
                        move = v.mul_(momentum).add_(move)
                    p.add_(move, alpha=-lr)
        if self.scaler is not None:
            self.scaler.update()
