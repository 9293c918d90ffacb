"""Test-set evaluation and the loss, shared by the hub, the workers and ``evaluate``."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .data import ArrayDataset, DatasetInfo, normalize


def batch_loss(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor,
               info: DatasetInfo) -> torch.Tensor:
    """Mean cross-entropy of ``model`` on uint8 ``images`` (normalised here)."""
    return F.cross_entropy(model(normalize(images, info)), labels)


@torch.no_grad()
def evaluate(model: torch.nn.Module, dataset: ArrayDataset, *, device: str | torch.device = "cpu",
             batch_size: int = 500) -> tuple[float, float]:
    """Return ``(accuracy, mean loss)`` of ``model`` on ``dataset``."""
    was_training = model.training
    model.eval()
    correct, loss_sum = 0, 0.0
    try:
        for start in range(0, len(dataset), batch_size):
            images = dataset.images[start:start + batch_size].to(device)
            labels = dataset.labels[start:start + batch_size].to(device)
            logits = model(normalize(images, dataset.info))
            loss_sum += float(F.cross_entropy(logits, labels, reduction="sum"))
            correct += int((logits.argmax(dim=1) == labels).sum())
    finally:
        model.train(was_training)
    n = max(1, len(dataset))
    return correct / n, loss_sum / n
