"""The training recipe on a worker's compute: label smoothing, the inner AdamW of local steps
(its state kept across rounds), clipping inside local steps, and the precision.

There is no GPU here: the CUDA and MPS paths are checked through the choice function
(``choose_precision``) and a CPU stand-in for fp16, whose loss scaler runs for real."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest
import torch
import torch.nn.functional as F
from helpers.protocol import EXAMPLES

from computeshare_desktop.data import load_dataset, normalize
from computeshare_desktop.devices import Precision, choose_precision, precision_for
from computeshare_desktop.errors import ConfigError, RejectedError
from computeshare_desktop.models import build_model, flatten, gradients, load_flat_parameters
from computeshare_desktop.protocol import MsgType, RejectCode
from computeshare_desktop.sampling import stream_positions
from computeshare_desktop.worker.compute import GradientComputer
from computeshare_desktop.worker.recipe import PLAIN, Recipe

DATA = load_dataset("mnist-sample", "train")
SHARD = 512  # samples this worker holds
CPU = torch.device("cpu")


def compute(**recipe: object) -> GradientComputer:
    """simplenet on a shard of mnist-sample, with ``recipe``'s changes to the plain one."""
    return GradientComputer(build_model("simplenet", DATA.info, seed=0), DATA.info, CPU,
                            DATA.images[:SHARD], DATA.labels[:SHARD], shard=0, seed=0,
                            recipe=dataclasses.replace(PLAIN, **recipe))  # type: ignore[arg-type]


def batch(start: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    idx = stream_positions(SHARD, 0, 0, start, size)
    return normalize(DATA.images[:SHARD][idx], DATA.info), DATA.labels[:SHARD][idx]


def reference() -> tuple[torch.nn.Module, list[torch.nn.Parameter]]:
    model = build_model("simplenet", DATA.info, seed=0)
    return model, [p for p in model.parameters() if p.requires_grad]


def initial() -> torch.Tensor:
    return flatten(reference()[1]).clone()


# ----------------------------------------------------------------- label smoothing
def test_label_smoothing_gives_the_loss_and_gradient_of_torchs() -> None:
    smooth = compute(label_smoothing=0.1).gradient(initial(), 0, 32)
    plain = compute().gradient(initial(), 0, 32)
    model, params = reference()
    images, labels = batch(0, 32)
    loss = F.cross_entropy(model(images), labels, label_smoothing=0.1)
    loss.backward()
    assert smooth.loss == pytest.approx(loss.item(), rel=1e-6)
    torch.testing.assert_close(smooth.flat, gradients(params), atol=1e-7, rtol=1e-5)
    assert (smooth.flat - plain.flat).abs().max() > 1e-4  # it is not the plain loss
    assert smooth.loss != pytest.approx(plain.loss, rel=1e-4)


# ----------------------------------------------------------------- local steps
def adamw_reference(rounds: list[torch.Tensor], steps: int, lr: float,
                    wd: float) -> list[torch.Tensor]:
    """torch's AdamW made once and stepped through every round, each round starting from
    its given weights (the hub's after the outer step): the change of each round."""
    model, params = reference()
    adamw = torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    changes, start = [], 0
    for weights in rounds:
        load_flat_parameters(model, weights)
        for _ in range(steps):
            images, labels = batch(start, 8)
            adamw.zero_grad()
            F.cross_entropy(model(images), labels).backward()
            adamw.step()
            start += 8
        changes.append(weights - flatten(params))
    return changes


def test_local_steps_with_adamw_keep_its_state_across_rounds() -> None:
    c = compute(optimizer="adamw", weight_decay=0.01)
    w0 = initial()
    first = c.local_steps(w0, 0, 8, 3, 1e-3)
    w1 = w0 - 0.7 * first.flat  # what an outer step might publish
    second = c.local_steps(w1, 24, 8, 3, 1e-3)
    want = adamw_reference([w0, w1], 3, 1e-3, 0.01)
    torch.testing.assert_close(first.flat, want[0], atol=1e-6, rtol=1e-4)
    torch.testing.assert_close(second.flat, want[1], atol=1e-6, rtol=1e-4)
    fresh = compute(optimizer="adamw", weight_decay=0.01).local_steps(w1, 24, 8, 3, 1e-3)
    assert (fresh.flat - second.flat).abs().max() > 1e-5  # the kept moments mattered
    assert c.adamw is not None and all(s["step"].item() == 6 for s in c.adamw.state.values())


def test_gradients_or_a_new_compute_start_adamw_afresh() -> None:
    c = compute(optimizer="adamw")
    c.local_steps(initial(), 0, 8, 2, 1e-3)
    c.gradient(initial(), 0, 8)  # the session switched to gradients
    assert c.adamw is None
    again = c.local_steps(initial(), 16, 8, 2, 1e-3)
    fresh = compute(optimizer="adamw").local_steps(initial(), 16, 8, 2, 1e-3)
    torch.testing.assert_close(again.flat, fresh.flat, atol=0, rtol=0)


def test_plain_sgd_local_steps_are_unchanged() -> None:
    """The default recipe's local steps are plain SGD, as before the recipe existed."""
    update = compute().local_steps(initial(), 0, 8, 2, 0.05)
    model, params = reference()
    for step in range(2):
        images, labels = batch(step * 8, 8)
        model.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        with torch.no_grad():
            for p in params:
                p -= 0.05 * p.grad
    torch.testing.assert_close(update.flat, initial() - flatten(params), atol=1e-7, rtol=1e-5)


def test_clip_grad_clips_every_local_step() -> None:
    clipped = compute(clip_grad=0.05).local_steps(initial(), 0, 8, 3, 0.1)
    model, params = reference()
    norms = []
    for step in range(3):
        images, labels = batch(step * 8, 8)
        model.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(params, 0.05)))
        with torch.no_grad():
            for p in params:
                p -= 0.1 * p.grad
    assert min(norms) > 0.05  # every step was really clipped
    torch.testing.assert_close(clipped.flat, initial() - flatten(params), atol=1e-6, rtol=1e-5)
    assert clipped.flat.norm() <= 3 * 0.1 * 0.05 * (1 + 1e-5)  # each step moved <= lr * NORM


def test_clip_grad_leaves_gradients_to_the_hub() -> None:
    clipped = compute(clip_grad=1e-3).gradient(initial(), 0, 32)
    torch.testing.assert_close(clipped.flat, compute().gradient(initial(), 0, 32).flat)


# ----------------------------------------------------------------- precision
def test_auto_on_the_cpu_is_fp32() -> None:
    c = compute(precision="auto")
    assert c.precision.name == "fp32" and c.precision.dtype is None and c.scaler is None
    assert torch.equal(c.gradient(initial(), 0, 32).flat,
                       compute().gradient(initial(), 0, 32).flat)


def test_bf16_on_the_cpu_when_asked_gives_float32_gradients_close_to_fp32() -> None:
    c = compute(precision="bf16")
    assert c.precision.dtype is torch.bfloat16
    with c.precision.autocast():
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype is torch.bfloat16
    low = c.gradient(initial(), 0, 32)
    full = compute().gradient(initial(), 0, 32)
    assert low.flat.dtype is torch.float32 and bool(torch.isfinite(low.flat).all())
    assert not torch.equal(low.flat, full.flat)  # autocast really ran
    assert (low.flat - full.flat).norm() < 0.15 * full.flat.norm()
    assert F.cosine_similarity(low.flat, full.flat, dim=0) > 0.99
    steps = c.local_steps(initial(), 0, 8, 2, 0.05)  # weights stay float32 too
    assert steps.flat.dtype is torch.float32 and c.params[0].dtype is torch.float32


def fp16_stand_in(init_scale: float) -> GradientComputer:
    """A CPU compute set up as a GPU's fp16 would be: fp16 autocast behind a GradScaler."""
    c = compute()
    c.precision = Precision("fp16", "cpu")
    c.scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    return c


def test_fp16_gradients_are_unscaled_and_an_overflow_is_computed_again() -> None:
    full = compute().gradient(initial(), 0, 32).flat
    c = fp16_stand_in(2.0 ** 24)  # far too large: the first tries overflow in fp16
    low = c.gradient(initial(), 0, 32).flat
    assert c.scaler is not None and c.scaler.get_scale() < 2.0 ** 24  # it backed off
    assert low.dtype is torch.float32 and bool(torch.isfinite(low).all())
    assert (low - full).norm() < 0.05 * full.norm()  # unscaled: the true gradient


def test_fp16_local_steps_skip_an_overflowing_step() -> None:
    c = fp16_stand_in(2.0 ** 40)  # the first step overflows: skipped, as GradScaler does
    update = c.local_steps(initial(), 0, 8, 1, 0.1)
    assert torch.equal(update.flat, torch.zeros_like(update.flat))
    c = fp16_stand_in(2.0 ** 10)
    update = c.local_steps(initial(), 0, 8, 2, 0.1)
    full = compute().local_steps(initial(), 0, 8, 2, 0.1)
    assert (update.flat - full.flat).norm() < 0.05 * full.flat.norm()
    adamw = fp16_stand_in(2.0 ** 10)
    adamw.recipe = dataclasses.replace(PLAIN, optimizer="adamw")
    assert bool(torch.isfinite(adamw.local_steps(initial(), 0, 8, 2, 1e-3).flat).all())


@pytest.mark.parametrize("requested,device,bf16,want", [
    ("auto", "cuda", True, "bf16"),  # Ampere and later
    ("auto", "cuda", False, "fp32"),  # older GPUs
    ("auto", "mps", True, "bf16"),  # macOS 14 and later
    ("auto", "mps", False, "fp32"),
    ("auto", "cpu", True, "fp32"),  # the CPU stays fp32 unless asked
    ("fp32", "cuda", True, "fp32"),
    ("bf16", "cpu", True, "bf16"),  # asked by name: CPUs have it
    ("bf16", "cuda", True, "bf16"),
    ("bf16", "mps", False, "fp32"),  # (with a note)
    ("fp16", "cuda", True, "fp16"),
    ("fp16", "mps", True, "fp16"),
    ("fp16", "cpu", True, "fp32"),  # fp16 is for GPUs (with a note)
])
def test_the_precision_a_device_computes_in(requested: str, device: str, bf16: bool,
                                            want: str) -> None:
    name, note = choose_precision(requested, device, bf16=bf16)
    assert name == want
    assert bool(note) == (requested not in ("auto", want))


def test_fp16_on_a_gpu_comes_with_a_loss_scaler_and_autocast_of_its_dtype() -> None:
    gpu = Precision("fp16", "cuda")
    assert gpu.dtype is torch.float16
    assert Precision("bf16", "cuda").dtype is torch.bfloat16
    assert Precision("bf16", "mps").scaler() is None and Precision("fp32", "cuda").scaler() is None
    stand_in = Precision("fp16", "cpu").scaler()  # a GPU's GradScaler, on the CPU's backend
    assert isinstance(stand_in, torch.amp.GradScaler) and stand_in.is_enabled()
    with pytest.raises(ConfigError):
        choose_precision("fp8", "cuda", bf16=True)
    assert precision_for("auto", CPU) == Precision("fp32", "cpu")


# ----------------------------------------------------------------- the Welcome's recipe
def test_the_recipe_comes_from_the_welcome_and_impossible_ones_are_refused() -> None:
    welcome = EXAMPLES[MsgType.WELCOME]
    assert Recipe.of(welcome) == Recipe("adamw", 0.05, 0.1, 1.0, "auto")
    for bad in ({"label_smoothing": 1.0}, {"label_smoothing": float("nan")},
                {"clip_grad": -1.0}, {"weight_decay": float("inf")}):
        with pytest.raises(RejectedError) as info:
            Recipe.of(msgspec.structs.replace(welcome, **bad))
        assert info.value.code is RejectCode.MALFORMED
