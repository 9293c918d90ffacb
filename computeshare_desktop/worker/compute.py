"""One worker step: load a model version, take this version's batch, return its gradient."""

from __future__ import annotations

import time

import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from ..data import DatasetInfo
from ..evaluation import batch_loss
from ..sampling import batch_indices


class GradientComputer:
    """Holds the model and the shard on the worker's device."""

    def __init__(self, model: torch.nn.Module, info: DatasetInfo, device: torch.device,
                 images: torch.Tensor, labels: torch.Tensor, *, shard: int, seed: int,
                 batch_size: int) -> None:
        self.model = model.to(device).train()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.numel = sum(p.numel() for p in self.params)
        self.info = info
        self.device = device
        self.images = images.to(device)
        self.labels = labels.to(device)
        self.shard = shard
        self.seed = seed
        self.batch_size = batch_size

    def compute(self, weights: torch.Tensor,
                version: int) -> tuple[torch.Tensor, float, int, float]:
        """Return ``(flat gradient on CPU, loss, samples, seconds)`` for model ``version``."""
        start = time.perf_counter()
        with torch.no_grad():
            vector_to_parameters(weights.to(self.device), self.params)
        idx = batch_indices(len(self.labels), self.batch_size, self.seed, self.shard, version)
        idx = idx.to(self.device)
        self.model.zero_grad(set_to_none=False)
        loss = batch_loss(self.model, self.images[idx], self.labels[idx], self.info)
        loss.backward()
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        flat = parameters_to_vector(grads).detach().to("cpu", torch.float32)
        return flat, float(loss.detach()), len(idx), time.perf_counter() - start
