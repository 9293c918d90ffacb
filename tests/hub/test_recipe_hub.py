"""The training recipe on the hub: AdamW, the learning-rate schedule, gradient clipping, and
how they meet top-k pushes, local steps and checkpoints (HubCore on a fake clock)."""

from __future__ import annotations

import io
import math

import pytest
import torch
from helpers.hub import (T0, full_round, grads, make_hub, only, optimizer_copy, start_training,
                         weights)

from computeshare_desktop.data import load_dataset
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.hub.lr_schedule import LrSchedule
from computeshare_desktop.hub.presets import Mode
from computeshare_desktop.hub.trainer import ParameterServer
from computeshare_desktop.models import build_model, split
from computeshare_desktop.protocol.messages import Model, Welcome


def set_grads(params: list[torch.Tensor], flat: torch.Tensor) -> None:
    for p, part in zip(params, split(flat, params), strict=True):
        p.grad = part.clone()


def flat(params: list[torch.Tensor]) -> torch.Tensor:
    return torch.nn.utils.parameters_to_vector(params).detach()


def server(**overrides: object) -> ParameterServer:
    config = HubConfig(**{"workers": 1, "batch_size": 8, **overrides})  # type: ignore[arg-type]
    model = build_model(config.model, load_dataset("mnist-sample", "train").info, seed=0)
    return ParameterServer.for_session(model, config)


# ----------------------------------------------------------------- AdamW
def test_adamw_on_the_hub_is_torch_adamw_on_the_averaged_gradients() -> None:
    """Three rounds of two unequal pushes: each step is torch's AdamW on their
    sample-weighted mean, at the base rate times sqrt(samples / batch_size)."""
    hub = make_hub(optimizer="adamw", lr=0.002, weight_decay=0.05, batch_size=24)
    w1, w2 = start_training(hub)
    _, _, params = optimizer_copy(hub)
    adamw = torch.optim.AdamW(params, lr=0.002, weight_decay=0.05)
    s1, s2 = 8, 24
    for version in range(3):
        g1, g2 = grads(hub, 2, seed=version)
        w1.push(hub, T0, g1, samples=s1)
        w2.push(hub, T0, g2, samples=s2)
        assert hub.server.version == version + 1
        set_grads(params, (g1 * s1 + g2 * s2) / (s1 + s2))
        for group in adamw.param_groups:
            group["lr"] = 0.002 * math.sqrt((s1 + s2) / 24)  # the square-root rule
        adamw.step()
        torch.testing.assert_close(weights(hub), flat(params), atol=1e-7, rtol=0)
    assert hub.server.optimizer is hub.server.adamw


def test_adamw_lr_scales_with_the_square_root_sgd_linearly() -> None:
    sgd, adamw = server(lr=0.01), server(lr=0.01, optimizer="adamw")
    assert sgd.lr_for(32) == pytest.approx(0.04)
    assert adamw.lr_for(32) == pytest.approx(0.02)
    assert adamw.lr_for(8) == sgd.lr_for(8) == pytest.approx(0.01)


def test_adamw_keeps_its_moments_on_the_hub_with_topk_pushes() -> None:
    """Top-k with SGD: the workers keep the momentum (DGC). With AdamW the hub keeps the
    optimizer's state and the workers none."""
    sgd_hub = make_hub(codec="topk", momentum=0.9)
    assert sgd_hub.server.worker_momentum == 0.9
    hub = make_hub(codec="topk", momentum=0.9, optimizer="adamw", lr=0.001)
    assert hub.server.worker_momentum == 0.0
    w1, w2 = start_training(hub)
    full_round(hub, [w1, w2], T0)
    model = only(w1.pull(hub, T0, after=0))
    assert isinstance(model, Model) and model.momentum == 0.0
    state = hub.server.adamw.state  # type: ignore[union-attr]
    assert len(state) == len(hub.server.params)
    assert all(s["exp_avg"].count_nonzero() > 0 for s in state.values())


def test_adamw_with_local_steps_steps_the_outer_nesterov_without_decay() -> None:
    hub = make_hub(optimizer="adamw", local_steps=4, outer="nesterov", weight_decay=0.1,
                   momentum=0.9, lr=0.001)
    ps = hub.server
    assert ps.optimizer is ps.sgd
    group = ps.sgd.param_groups[0]
    assert group["nesterov"] and group["momentum"] == 0.9
    assert group["weight_decay"] == 0.0  # the decay is the workers' inner AdamW's
    assert ps.lr_for(8 * 2) == pytest.approx(0.001)  # the inner rate: each worker's batch
    sgd = make_hub(local_steps=4, outer="nesterov", weight_decay=0.1).server
    assert sgd.sgd.param_groups[0]["weight_decay"] == 0.1  # SGD's decay stays the hub's


def test_adamw_local_steps_with_topk_average_without_momentum() -> None:
    """Sparse pushes of local AdamW steps: the moments are the workers' inner AdamW's, so
    neither side keeps a velocity, and the outer step is the plain average (lr 1), which
    a sparse download follows exactly."""
    ps = make_hub(optimizer="adamw", codec="topk", local_steps=4, momentum=0.9).server
    assert ps.worker_momentum == 0.0 and ps.outer_lr == 1.0
    assert ps.sgd.param_groups[0]["momentum"] == 0.0
    change = torch.zeros(ps.numel)
    change[:7] = 0.1
    before = ps.flat()
    ps.step(change.clone(), 8, steps=4)
    torch.testing.assert_close(before - ps.flat(), change)


def test_auto_outer_is_nesterov_with_adamw_whatever_the_local_steps() -> None:
    assert HubConfig(optimizer="adamw").outer_for(1) == "nesterov"
    assert HubConfig().outer_for(1) == "sgd" and HubConfig().outer_for(2) == "nesterov"


def test_switching_to_local_steps_restarts_adamw() -> None:
    ps = server(optimizer="adamw", lr=0.001)
    ps.step(torch.ones(ps.numel), 8)
    assert ps.adamw is not None and ps.adamw.state
    ps.set_mode(Mode("zstd", 0.01, 4), "nesterov", 0.7)
    assert not ps.adamw.state and ps.optimizer is ps.sgd


def test_the_welcome_carries_the_recipe() -> None:
    hub = make_hub(optimizer="adamw", weight_decay=0.01, label_smoothing=0.1, clip_grad=2.0,
                   precision="bf16", lr=0.001)
    welcome = start_training(hub)[0].welcome
    assert isinstance(welcome, Welcome)
    assert (welcome.optimizer, welcome.weight_decay, welcome.label_smoothing,
            welcome.clip_grad, welcome.precision) == ("adamw", 0.01, 0.1, 2.0, "bf16")


def test_a_checkpoint_resumes_adamw_bit_for_bit() -> None:
    ps, again = server(optimizer="adamw", lr=0.001), server(optimizer="adamw", lr=0.001)
    gen = torch.Generator().manual_seed(0)
    for _ in range(2):
        ps.step(torch.randn(ps.numel, generator=gen), 8)
    buffer = io.BytesIO()  # as checkpoint.pt is written and read back
    torch.save(ps.state(), buffer)
    buffer.seek(0)
    again.restore(torch.load(buffer, weights_only=True))
    step = torch.randn(ps.numel, generator=gen)
    ps.step(step.clone(), 8)
    again.step(step.clone(), 8)
    assert torch.equal(ps.flat(), again.flat())


# ----------------------------------------------------------------- the schedule
def test_cosine_schedule_values() -> None:
    s = LrSchedule("cosine", warmup=10, total=110)
    assert s.factor(0) == pytest.approx(0.1)  # the first warm-up step is already a step
    assert s.factor(4) == pytest.approx(0.5)
    assert s.factor(9) == pytest.approx(1.0)
    assert s.factor(10) == pytest.approx(1.0)  # the peak, where the cosine starts
    assert s.factor(60) == pytest.approx(0.5)  # half-way through the decay
    assert s.factor(109) == pytest.approx(0.5 * (1 + math.cos(math.pi * 99 / 100)))
    assert s.factor(110) == pytest.approx(0.0, abs=1e-12)
    assert all(s.factor(v) >= s.factor(v + 1) for v in range(10, 110))
    constant = LrSchedule("constant", warmup=4, total=100)
    assert [constant.factor(v) for v in (0, 3, 4, 99)] == [0.25, 1.0, 1.0, 1.0]


def test_the_hub_steps_with_the_scheduled_rate() -> None:
    """With momentum 0, each step moves the weights by exactly lr(v) * the gradient."""
    hub = make_hub(schedule="cosine", warmup=2, rounds=6, momentum=0.0, lr=0.01,
                   batch_size=8)
    w1, w2 = start_training(hub)
    expected = LrSchedule("cosine", 2, 6)
    for version in range(6):
        before = weights(hub)
        g1, g2 = grads(hub, 2, seed=version)
        w1.push(hub, T0, g1)
        w2.push(hub, T0, g2)
        lr = 0.01 * 2 * expected.factor(version)  # two workers' batches: linear scaling
        torch.testing.assert_close(weights(hub), before - lr * (g1 + g2) / 2, atol=1e-7,
                                   rtol=1e-5)
    assert expected.factor(5) < 0.15  # the last step is a small one


def test_local_steps_get_the_scheduled_inner_rate() -> None:
    hub = make_hub(schedule="cosine", warmup=0, rounds=8, local_steps=2, lr=0.01,
                   batch_size=8, outer="sgd")
    w1, w2 = start_training(hub)
    rates = []
    for _ in range(4):
        version = hub.server.version
        rates.append(only(w1.pull(hub, T0, after=version - 1)).lr)
        for w, g in zip((w1, w2), grads(hub, 2, seed=version), strict=True):
            w.push(hub, T0, g, samples=16, steps=2)
    cosine = LrSchedule("cosine", 0, 8)
    assert rates == pytest.approx([0.01 * 2 * cosine.factor(v) for v in (0, 2, 4, 6)])


def test_the_constant_schedule_is_todays_rate() -> None:
    ps = server(lr=0.01)
    ps.version = 500
    assert ps.lr_for(16) == pytest.approx(0.02)


# ----------------------------------------------------------------- clipping
def test_clip_grad_bounds_the_step() -> None:
    """With momentum 0 and no decay, the step is lr * the clipped gradient: its norm is
    at most lr * NORM, and a gradient already under the norm passes untouched."""
    ps = server(clip_grad=0.5, momentum=0.0, lr=0.1)
    big = torch.randn(ps.numel, generator=torch.Generator().manual_seed(0))
    before = ps.flat()
    ps.step(big.clone(), 8)
    moved = before - ps.flat()
    assert moved.norm() == pytest.approx(0.1 * 0.5, rel=1e-4)
    torch.testing.assert_close(moved, 0.1 * big * 0.5 / big.norm(), atol=1e-6, rtol=1e-4)
    small = big / big.norm() * 0.2
    before = ps.flat()
    ps.step(small.clone(), 8)
    torch.testing.assert_close(before - ps.flat(), 0.1 * small, atol=1e-7, rtol=1e-5)


def test_clip_grad_clips_the_average_not_each_push() -> None:
    hub = make_hub(clip_grad=1.0, momentum=0.0, lr=0.01)
    w1, w2 = start_training(hub)
    g = grads(hub, 1, seed=3)[0]
    g = g / g.norm() * 3.0
    before = weights(hub)
    w1.push(hub, T0, g)
    w2.push(hub, T0, -g * 0.5)  # the mean has norm 0.75: under the bound, untouched
    torch.testing.assert_close(before - weights(hub), 0.02 * (g - 0.5 * g) / 2, atol=1e-7,
                               rtol=1e-5)


def test_clip_grad_leaves_local_steps_to_the_workers() -> None:
    ps = server(clip_grad=0.01, local_steps=2, outer="sgd", momentum=0.0)
    change = torch.full((ps.numel,), 0.1)
    before = ps.flat()
    ps.step(change.clone(), 8, steps=2)
    torch.testing.assert_close(before - ps.flat(), change)  # outer SGD at lr 1, unclipped


def test_async_updates_step_with_the_scheduled_rate() -> None:
    """Async: each push is one version; its rate is the schedule's at that version (times
    the staleness factor, 1 for a fresh update)."""
    hub = make_hub(updates="async", preset="lan", schedule="cosine", warmup=2, rounds=5,
                   momentum=0.0, lr=0.01, batch_size=8)
    w1, _ = start_training(hub)
    expected = LrSchedule("cosine", 2, 5)  # 0.5, 1, 1, 0.75, 0.25
    for version in range(4):
        before = weights(hub)
        g = grads(hub, 1, seed=version)[0]
        w1.push(hub, T0, g)  # one worker's batch: no scaling
        torch.testing.assert_close(weights(hub), before - 0.01 * expected.factor(version) * g,
                                   atol=1e-7, rtol=1e-5)
        w1.pull(hub, T0, after=version)
