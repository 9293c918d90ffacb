"""A worker's compute without a model: one fixed random gradient, N(0, 1e-3), of the model's
size. The worker tests drive their cores with it (tests/worker/worker_sim.py), and so do
the soak's simulated workers (benchmarks/soak_worker.py) through the real driver.

``FakeFactory`` is a ``ComputeFactory``: it accepts every model (or refuses every one) and
builds a ``FakeCompute``. Given ``version`` (the model version being worked on), the
gradient's sign alternates with it, so a hub that really steps on it oscillates instead of
drifting, however long it runs. ``record`` keeps the weights of every round's work, for a
test to compare (a long run leaves it off).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

import torch

from computeshare_desktop.data import dataset_info
from computeshare_desktop.errors import RejectedError
from computeshare_desktop.models import build_model, parameter_count
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.worker.compute import Update

__all__ = ["FakeCompute", "FakeFactory", "model_size"]


class FakeCompute:
    """A fixed gradient instead of a model; each round takes ``seconds`` plus
    ``sample_s`` per sample (what it reports: the hub's planner balances on it)."""

    def __init__(self, numel: int, *, seed: int = 0, seconds: float = 0.01,
                 sample_s: float = 0.0, on_work: Callable[[], None] | None = None,
                 version: Callable[[], int] | None = None, record: bool = True) -> None:
        self.numel = numel
        self.on_work = on_work  # called during each round's work
        self.version = version
        self.device = torch.device("cpu")
        self.grad = torch.randn(numel, generator=torch.Generator().manual_seed(seed)) * 1e-3
        self.seconds, self.sample_s = seconds, sample_s
        self.record = record
        self.seen: list[torch.Tensor] = []  # the weights of every round's work (record)

    def gradient(self, weights: torch.Tensor, start: int, batch: int) -> Update:
        self._saw(weights)
        if self.on_work is not None:
            self.on_work()
        return Update(self.grad * self._sign(), 0.5, batch, self._took(batch))

    def local_steps(self, weights: torch.Tensor, start: int, batch: int, steps: int,
                    lr: float, *, momentum: float = 0.0,
                    velocity: torch.Tensor | None = None) -> Update:
        self._saw(weights)
        return Update(self.grad * (self._sign() * lr * steps), 0.5, batch * steps,
                      self._took(batch * steps))

    def load_stats(self, stats: torch.Tensor) -> None:
        """No running statistics to set."""

    def _saw(self, weights: torch.Tensor) -> None:
        if self.record:
            self.seen.append(weights.clone())

    def _sign(self) -> int:
        return 1 if self.version is None or self.version() % 2 == 0 else -1

    def _took(self, samples: int) -> float:
        return self.seconds + samples * self.sample_s


class FakeFactory:
    """Builds a FakeCompute of ``numel`` values (None: the size of the Welcome's registry
    model); ``refuse``: the model check fails. Other keywords go to each FakeCompute."""

    def __init__(self, numel: int | None, *, refuse: bool = False,
                 **compute: Any) -> None:
        self.numel, self.refuse, self.compute = numel, refuse, compute
        self.built: list[FakeCompute] = []
        self.shard_sizes: list[int] = []

    def check(self, welcome: Any, graph: Any = None) -> None:
        if self.refuse:
            raise RejectedError(RejectCode.ARCH_MISMATCH, "this machine builds another model")

    def build(self, welcome: Any, images: torch.Tensor, labels: torch.Tensor) -> FakeCompute:
        self.shard_sizes.append(len(labels))
        numel = self.numel if self.numel is not None else model_size(welcome.model,
                                                                     welcome.dataset)
        self.built.append(FakeCompute(numel, **self.compute))
        return self.built[-1]


@lru_cache(maxsize=8)
def model_size(model: str, dataset: str) -> int:
    """Trainable values of a registry model (what the hub's weights hold)."""
    return parameter_count(build_model(model, dataset_info(dataset)))
