"""Device choice: real test passes, fallback to the CPU with a clear note."""

from __future__ import annotations

import pytest
import torch

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.service.join import worker_label
from computeshare_desktop import devices as device_mod
from computeshare_desktop.worker import pick_device


def test_cpu_passes_the_test_pass_and_is_described():
    assert device_mod.verify(torch.device("cpu")) is None
    choice = pick_device("cpu")
    assert choice.device.type == "cpu" and choice.description.startswith("CPU, ")
    assert choice.note == ""


def test_auto_picks_a_working_device():
    choice = pick_device("auto")
    assert device_mod.verify(choice.device) is None
    if not torch.cuda.is_available():
        assert choice.device.type in ("cpu", "mps")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a real GPU is present")
def test_requested_cuda_without_gpu_falls_back_with_note():
    choice = pick_device("cuda")
    assert choice.device.type == "cpu"
    assert "cuda is not available" in choice.note and "using the CPU" in choice.note


@pytest.mark.skipif(torch.cuda.is_available(), reason="a real GPU is present")
def test_accelerator_that_claims_to_exist_but_fails_falls_back(monkeypatch):
    # torch's CUDA build reports an accelerator here; a real pass on it must fail.
    monkeypatch.setattr(device_mod, "_available", lambda kind: kind in ("cuda", "cpu"))
    choice = pick_device("auto")
    assert choice.device.type == "cpu"
    assert "cuda failed a test pass" in choice.note


def test_unknown_device_is_a_config_error():
    with pytest.raises(ConfigError, match="--device must be one of"):
        pick_device("tpu")


@pytest.mark.parametrize("device,description,short", [
    (torch.device("cpu"), "CPU, 8 cores", "CPU"),
    (torch.device("mps"), "Apple MPS", "Apple GPU"),
    (torch.device("cuda", 0), "NVIDIA GeForce RTX 4090 (CUDA)", "RTX 4090"),
    (torch.device("cuda", 1), "NVIDIA A100-SXM4-40GB (CUDA)", "A100-SXM4-40GB #1"),
])
def test_a_worker_is_named_by_its_machine_and_device(device, description, short):
    choice = device_mod.DeviceChoice(device, description)
    assert choice.short == short
    assert worker_label("vm", choice) == f"vm · {short}"
    assert worker_label("vm", choice, "host") == f"vm · {short} (host)"
