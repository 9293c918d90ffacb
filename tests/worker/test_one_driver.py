"""One driver: only worker/driver.py feeds a WorkerCore the outcome of its effects (the soak's
simulated workers run that driver too, with a connector and a fake compute of their own);
testbed's fake compute alternates its sign with the model version and can keep nothing."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import torch

from testbed.fake_compute import FakeCompute, FakeFactory, model_size

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "computeshare_desktop" / "worker" / "driver.py"
CORE = REPO / "computeshare_desktop" / "worker" / "core.py"
# The core's inputs that report how an effect was carried out (worker/effects.py).
OUTCOMES = {"replied", "prepared", "kept", "loaded", "computed", "woke", "said_goodbye"}


def drives(path: Path) -> list[int]:
    """Lines of ``path`` that hand a core an effect's outcome (``core.replied`` and such)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted({node.lineno for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and node.attr in OUTCOMES
                   and isinstance(node.ctx, ast.Load)})


def test_the_detector_finds_a_driver(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("effects = core.replied(frames, now)\nstep = self.core.woke\n"
                      "core.replied_at = 1\n", encoding="utf-8")
    assert drives(sample) == [1, 2]


def test_worker_driver_is_the_only_driver_outside_the_tests():
    found = {str(p.relative_to(REPO)): lines
             for folder in ("computeshare_desktop", "benchmarks", "testbed")
             for p in sorted((REPO / folder).rglob("*.py"))
             if p not in (DRIVER, CORE) and (lines := drives(p))}
    assert found == {}
    assert drives(DRIVER)


def test_the_soak_drives_the_real_driver():
    soak = (REPO / "benchmarks" / "soak_worker.py").read_text(encoding="utf-8")
    assert "WorkerDriver(" in soak and "FakeFactory(" in soak


def test_the_fake_gradient_alternates_with_the_version_and_keeps_nothing_unasked():
    version = [4]
    compute = FakeCompute(8, seed=3, seconds=0.0, sample_s=0.001,
                          version=lambda: version[0], record=False)
    weights = torch.zeros(8)
    even = compute.gradient(weights, 0, 10)
    version[0] = 5
    odd = compute.gradient(weights, 0, 10)
    assert torch.equal(odd.flat, -even.flat) and even.flat.abs().max() > 0
    assert even.seconds == 10 * 0.001 and compute.seen == []
    steps = compute.local_steps(weights, 0, 10, 3, 0.5)
    assert torch.allclose(steps.flat, odd.flat * 1.5) and steps.samples == 30


def test_the_factory_sizes_the_compute_from_the_welcomes_model():
    welcome = SimpleNamespace(model="simplenet", dataset="mnist-sample")
    built = FakeFactory(None).build(welcome, torch.zeros(4, 1), torch.zeros(4))
    assert built.numel == model_size("simplenet", "mnist-sample") > 0
    assert FakeFactory(7).build(welcome, torch.zeros(4, 1), torch.zeros(4)).numel == 7
