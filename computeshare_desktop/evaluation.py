"""Test-set evaluation and the loss, shared by the hub, the workers and ``evaluate``."""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from .data import ArrayDataset, DatasetInfo, dataset_info, load_dataset, normalize
from .errors import ConfigError
from .models import build_model


def batch_loss(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor,
               info: DatasetInfo, *, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy of ``model`` on uint8 ``images`` (normalised here): the training
    loss, with ``label_smoothing`` when the session asks for it (the test loss never has it).

    The loss is taken in float32 even when the forward ran under autocast."""
    logits = model(normalize(images, info))
    return F.cross_entropy(logits.float(), labels, label_smoothing=label_smoothing)


@torch.no_grad()
def evaluate(model: torch.nn.Module, dataset: ArrayDataset, *,
             device: str | torch.device | None = None,
             batch_size: int = 500) -> tuple[float, float]:
    """Return ``(accuracy, mean loss)`` of ``model`` on ``dataset``, in float32, on
    ``device`` (None: where the model is; a model held elsewhere is evaluated as a copy, so
    the caller's stays put)."""
    tensors = list(itertools.chain(model.parameters(), model.buffers()))
    if device is None:
        device = tensors[0].device if tensors else torch.device("cpu")
    device = torch.device(device)
    if any(t.device.type != device.type for t in tensors):
        model = copy.deepcopy(model).to(device)
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


@dataclass(frozen=True, slots=True)
class Score:
    """A saved model's result on a test split."""

    accuracy: float
    loss: float
    samples: int


def evaluate_file(path: Path, model_name: str, dataset: str) -> Score:
    """Load a saved ``model_name`` for ``dataset`` (a file the user chose or the hub wrote:
    ``torch.load(weights_only=True)``) and score it on the test split.

    Raises:
        ConfigError: the file cannot be read, or is not that model for that dataset.
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
    model = build_model(model_name, dataset_info(dataset))
    try:
        model.load_state_dict(state)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path} is not a {model_name} for {dataset}: "
                          f"{str(exc).splitlines()[0]}") from None
    test = load_dataset(dataset, "test")
    accuracy, loss = evaluate(model, test)
    return Score(accuracy, loss, len(test))
