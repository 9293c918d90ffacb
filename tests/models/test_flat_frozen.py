"""One vector layout for the hub, the workers and the helpers: trainable parameters only.

A model with a frozen layer (a fine-tuned backbone) is where the copies used to disagree:
models/flat.py counted frozen parameters, the hub and the workers did not.
"""

from __future__ import annotations

import torch

from computeshare_desktop.data import dataset_info
from computeshare_desktop.hub.presets import Mode
from computeshare_desktop.hub.trainer import ParameterServer
from computeshare_desktop.models import (build_model, flat_gradients, flat_parameters,
                                         load_flat_parameters, parameter_count)
from computeshare_desktop.worker.compute import GradientComputer

INFO = dataset_info("mnist-sample")


def _frozen_model(seed: int = 0) -> torch.nn.Module:
    model = build_model("simplenet", INFO, seed=seed)
    for p in model.conv1.parameters():  # type: ignore[union-attr]
        p.requires_grad_(False)
    return model


def test_frozen_parameters_never_travel_and_every_side_agrees() -> None:
    model = _frozen_model()
    frozen = sum(p.numel() for p in model.conv1.parameters())  # type: ignore[union-attr]
    assert frozen == 260
    assert parameter_count(model) == 21_840 - frozen
    assert flat_parameters(model).numel() == parameter_count(model)
    server = ParameterServer(_frozen_model(), base_lr=0.1, momentum=0.0,
                             mode=Mode("zstd", 0.01, 0))
    images = torch.randint(0, 256, (8, *INFO.shape), dtype=torch.uint8)
    labels = torch.arange(8) % 10
    computer = GradientComputer(_frozen_model(), INFO, torch.device("cpu"), images, labels,
                                shard=0, seed=0)
    assert server.numel == computer.numel == parameter_count(model)
    assert torch.equal(server.flat(), flat_parameters(model))

    update = computer.gradient(server.flat(), 0, 8)
    assert update.flat.numel() == server.numel
    before = model.conv1.weight.detach().clone()  # type: ignore[union-attr]
    server.step(update.flat, 8)
    assert torch.equal(server.model.conv1.weight, before)  # type: ignore[union-attr]
    assert not torch.equal(server.flat(), flat_parameters(model))


def test_loading_and_gradients_skip_frozen_parameters() -> None:
    source, target = _frozen_model(seed=0), _frozen_model(seed=1)
    kept = target.conv1.weight.detach().clone()  # type: ignore[union-attr]
    load_flat_parameters(target, flat_parameters(source))
    assert torch.equal(flat_parameters(target), flat_parameters(source))
    assert torch.equal(target.conv1.weight, kept)  # type: ignore[union-attr]
    images = torch.randint(0, 256, (4, *INFO.shape), dtype=torch.float32)
    target(images).sum().backward()
    assert flat_gradients(target).numel() == parameter_count(target)
