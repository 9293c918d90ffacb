"""The global model and its optimizer: SGD with momentum and the linear scaling rule."""

from __future__ import annotations

from typing import Any

import torch
from torch.nn.utils import parameters_to_vector

from ..codec import get_codec


class ParameterServer:
    """Holds the global model, applies averaged gradients, serves encoded snapshots."""

    def __init__(self, model: torch.nn.Module, *, base_lr: float, momentum: float,
                 codec: str, version: int = 0) -> None:
        self.model = model.cpu().float()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.numel = sum(p.numel() for p in self.params)
        self.base_lr = base_lr
        self.optimizer = torch.optim.SGD(self.params, lr=base_lr, momentum=momentum)
        self.codec = get_codec(codec)
        self.version = version
        self._snapshot: tuple[int, bytes] | None = None

    def step(self, grad: torch.Tensor, num_gradients: int) -> None:
        """Apply one averaged gradient with ``lr = base_lr * num_gradients``."""
        offset = 0
        for p in self.params:
            n = p.numel()
            p.grad = grad[offset:offset + n].view_as(p).clone()
            offset += n
        for group in self.optimizer.param_groups:
            group["lr"] = self.base_lr * num_gradients
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.version += 1

    def flat(self) -> torch.Tensor:
        """A copy of the weights as one flat float32 vector."""
        return parameters_to_vector(self.params).detach().clone()

    def snapshot(self) -> bytes:
        """The encoded weights of the current version (encoded once per version)."""
        if self._snapshot is None or self._snapshot[0] != self.version:
            self._snapshot = (self.version, self.codec.encode(self.flat()))
        return self._snapshot[1]

    def state(self) -> dict[str, object]:
        """What a checkpoint needs to resume bit for bit."""
        buffers = [self.optimizer.state.get(p, {}).get("momentum_buffer") for p in self.params]
        return {"version": self.version, "model": self.model.state_dict(),
                "momentum": [b if b is not None else torch.zeros(0) for b in buffers]}

    def restore(self, state: dict[str, object]) -> None:
        """Inverse of ``state``."""
        model: Any = state["model"]
        momentum: Any = state["momentum"]
        self.model.load_state_dict(model)
        for p, buf in zip(self.params, momentum, strict=True):
            if buf.numel():
                self.optimizer.state[p]["momentum_buffer"] = buf.clone()
        self.version = int(state["version"])  # type: ignore[call-overload]
        self._snapshot = None
