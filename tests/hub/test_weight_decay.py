"""--weight-decay (added through the schema alone): the hub's SGD step decays the weights."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from computeshare_desktop.data import load_dataset, normalize
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.hub.trainer import ParameterServer
from computeshare_desktop.models import build_model, flat_gradients, load_flat_parameters

BATCH, STEPS, LR = 32, 25, 0.05


def train(weight_decay: float) -> tuple[torch.Tensor, float]:
    """The hub's weights after STEPS real gradients of mnist-sample (the same batches and
    initial weights each call), and the last batch's loss."""
    data = load_dataset("mnist-sample", "train")
    config = HubConfig(workers=1, batch_size=BATCH, lr=LR, weight_decay=weight_decay)
    server = ParameterServer.for_session(build_model(config.model, data.info, seed=0), config)
    worker = build_model(config.model, data.info, seed=0)
    loss = torch.tensor(0.0)
    for step in range(STEPS):
        load_flat_parameters(worker, server.flat())
        batch = slice(step * BATCH, (step + 1) * BATCH)
        worker.zero_grad()
        loss = F.cross_entropy(worker(normalize(data.images[batch], data.info)),
                               data.labels[batch])
        loss.backward()
        server.step(flat_gradients(worker), BATCH)
    return server.flat(), loss.item()


def test_weight_decay_shrinks_the_trained_weights_and_still_trains():
    plain, plain_loss = train(0.0)
    decayed, decayed_loss = train(0.05)
    assert decayed.norm() < plain.norm() * 0.99, (decayed.norm(), plain.norm())
    assert decayed_loss < 2.2 and plain_loss < 2.2  # both still learn (chance: ln 10 = 2.30)


def test_one_step_is_sgd_with_l2_decay():
    """w1 = w0 - lr * (g + wd * w0) on the first step (momentum has no history yet)."""
    data = load_dataset("mnist-sample", "train")
    config = HubConfig(workers=1, batch_size=BATCH, lr=LR, weight_decay=0.1)
    server = ParameterServer.for_session(build_model(config.model, data.info, seed=0), config)
    before = server.flat()
    gradient = torch.randn(before.numel(), generator=torch.Generator().manual_seed(1))
    server.step(gradient.clone(), BATCH)
    torch.testing.assert_close(server.flat(), before - LR * (gradient + 0.1 * before))
