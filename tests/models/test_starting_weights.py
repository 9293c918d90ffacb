"""--weights: state_dict files (.pth read weights-only, .safetensors) round-trip, weights
that do not fit name their first mismatching keys, and torchvision's pretrained names load
from a torch hub cache the test writes itself (the head resized, a gray stem folded).
Nothing downloads: conftest makes every fetch fail; the download test serves a file://."""

from __future__ import annotations

import dataclasses
import hashlib
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import torch
import torchvision.models
from torch import nn

from computeshare_desktop.data import dataset_info
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models import (build_model_from_spec, freeze_except,
                                         load_starting_weights, parse_model_spec)
from computeshare_desktop.models import hubcache
from computeshare_desktop.models.vision import fold_to_gray

REAL_FETCH = hubcache.fetch_url  # conftest replaces it in every test
REAL_URLOPEN = urllib.request.urlopen
MNIST, CIFAR = dataset_info("mnist"), dataset_info("cifar10")
GRAY32 = dataclasses.replace(MNIST, name="gray32", height=32, width=32, num_classes=7,
                            classes=())
SMALL = "mobilenet_v3_small"
SMALL_FILE = "mobilenet_v3_small-047dcff4.pth"  # what torchvision's URL names it


def _model(text: str, info=MNIST, seed: int = 0) -> nn.Module:
    return build_model_from_spec(parse_model_spec(text), info, seed=seed)


def _load(model: nn.Module, source: object, text: str, **kwargs: object) -> None:
    load_starting_weights(model, str(source), parse_model_spec(text), **kwargs)


def _error(model: nn.Module, source: object, text: str, **kwargs: object) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(model, source, text, **kwargs)
    return str(caught.value)


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# --------------------------------------------------------------------- files
@pytest.mark.parametrize("suffix", [".pth", ".pt", ".safetensors"])
def test_a_state_dict_file_round_trips(tmp_path, suffix: str) -> None:
    source, target = _model("resnet18", seed=1), _model("resnet18", seed=2)
    path = tmp_path / f"weights{suffix}"
    if suffix == ".safetensors":
        from safetensors.torch import save_file
        save_file(source.state_dict(), str(path))
    else:
        torch.save(source.state_dict(), path)
    _load(target, path, "resnet18")
    assert _same(target.state_dict(), source.state_dict())


def test_batchnorm_statistics_and_an_old_file_without_batch_counts(tmp_path) -> None:
    source, target = _model("torchvision:resnet18", CIFAR, 1), _model("torchvision:resnet18",
                                                                      CIFAR, 2)
    source.train()(torch.randn(4, 3, 32, 32))  # statistics that differ from a fresh model's
    state = {k: v for k, v in source.state_dict().items()
             if not k.endswith("num_batches_tracked")}
    torch.save(state, tmp_path / "old.pth")
    _load(target, tmp_path / "old.pth", "torchvision:resnet18")
    assert torch.equal(target.bn1.running_mean, source.bn1.running_mean)


def test_frozen_parameters_load_too(tmp_path) -> None:
    source, target = _model("simplenet", seed=1), _model("simplenet", seed=2)
    freeze_except(target, ["fc2"])
    torch.save(source.state_dict(), tmp_path / "w.pth")
    _load(target, tmp_path / "w.pth", "simplenet")
    assert _same(target.state_dict(), source.state_dict())


def test_weights_that_do_not_fit_name_the_first_keys(tmp_path) -> None:
    state = _model("simplenet", CIFAR).state_dict()
    state["extra.weight"] = torch.zeros(1)
    del state["fc2.bias"]
    torch.save(state, tmp_path / "cifar.pth")
    assert _error(_model("simplenet"), tmp_path / "cifar.pth", "simplenet") == (
        f"the weights in {tmp_path / 'cifar.pth'} do not fit simplenet: missing keys (1): "
        f"fc2.bias; unexpected keys (1): extra.weight; wrong shapes (2): conv1.weight "
        f"(10, 3, 5, 5) in the file, (10, 1, 5, 5) in the model, fc1.weight (50, 500) in "
        f"the file, (50, 320) in the model")


def test_at_most_five_keys_of_each_kind_are_listed(tmp_path) -> None:
    torch.save(_model("mlp").state_dict(), tmp_path / "mlp.pth")
    message = _error(_model("torchvision:resnet18", CIFAR), tmp_path / "mlp.pth",
                     "torchvision:resnet18")
    assert "missing keys (102): conv1.weight, bn1.weight, bn1.bias, bn1.running_mean, " \
           "bn1.running_var and 97 more; unexpected keys (6): fc1.weight, fc1.bias, " \
           "fc2.weight, fc2.bias, fc3.weight and 1 more" in message


def test_a_wrapper_prefix_is_pointed_out(tmp_path) -> None:
    model = _model("simplenet")
    torch.save({f"module.{k}": v for k, v in model.state_dict().items()}, tmp_path / "dp.pth")
    assert _error(model, tmp_path / "dp.pth", "simplenet").endswith(
        "(the file's keys carry an extra 'module'. prefix: strip it)")


def test_a_checkpoint_that_is_not_a_state_dict(tmp_path) -> None:
    model = _model("simplenet")
    torch.save({"epoch": 3, "model": model.state_dict()}, tmp_path / "ckpt.pth")
    assert _error(model, tmp_path / "ckpt.pth", "simplenet") == (
        f"{tmp_path / 'ckpt.pth'} holds a dict whose epoch, model are not tensors, not a "
        f"state_dict: save torch.save(model.state_dict(), PATH)")
    torch.save([1, 2], tmp_path / "list.pth")
    assert "holds a list, not a state_dict" in _error(model, tmp_path / "list.pth", "simplenet")


class Canary:
    """Unpickling this would create a file: weights_only must refuse it first."""

    path = ""

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (Path.write_text, (Path(self.path), "ran"))


def test_a_pickled_object_is_refused_without_running(tmp_path) -> None:
    canary = Canary()
    canary.path = str(tmp_path / "canary")
    torch.save({"fc2.weight": canary}, tmp_path / "evil.pth")
    message = _error(_model("simplenet"), tmp_path / "evil.pth", "simplenet")
    assert message.startswith(f"{tmp_path / 'evil.pth'} cannot be read as weights "
                              f"(torch.load, weights only):\nUnpicklingError")
    assert not (tmp_path / "canary").exists()


def test_files_that_are_missing_unknown_or_not_safetensors(tmp_path) -> None:
    model = _model("simplenet")
    assert _error(model, tmp_path / "none.pth", "simplenet") == \
        f"weights file {tmp_path / 'none.pth'} does not exist"
    assert _error(model, "weights.bin", "simplenet") == \
        "--weights weights.bin: give a .pth, .pt or .safetensors state_dict file"
    (tmp_path / "bad.safetensors").write_bytes(b"\x00" * 16)
    assert _error(model, tmp_path / "bad.safetensors", "simplenet").startswith(
        f"{tmp_path / 'bad.safetensors'} is not a safetensors file:")
    (tmp_path / "text.pth").write_text("hello", encoding="utf-8")
    assert "cannot be read as weights" in _error(model, tmp_path / "text.pth", "simplenet")


def test_a_weights_name_is_only_for_torchvision() -> None:
    assert _error(_model("simplenet"), "DEFAULT", "simplenet") == \
        "--weights DEFAULT: give a .pth, .pt or .safetensors state_dict file"


# -------------------------------------------------------- torchvision, by name
def _imagenet(arch: str, offline_torch_hub: Path, file_name: str, **kwargs: object) -> dict:
    """An ImageNet-shaped (1000 classes, RGB) state dict of ``arch`` where torchvision
    keeps its pretrained file."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(123)
        state = torchvision.models.get_model(arch, weights=None, **kwargs).state_dict()
    offline_torch_hub.mkdir(parents=True, exist_ok=True)
    torch.save(state, offline_torch_hub / file_name)
    return state


def test_default_weights_load_from_the_cache_with_the_head_resized_and_the_stem_folded(
        offline_torch_hub) -> None:
    imagenet = _imagenet(SMALL, offline_torch_hub, SMALL_FILE)
    model = _model(f"torchvision:{SMALL}", GRAY32)
    head = model.classifier[3].weight.detach().clone()
    _load(model, "DEFAULT", f"torchvision:{SMALL}")
    state = model.state_dict()
    assert torch.equal(state["features.0.0.weight"], fold_to_gray(imagenet["features.0.0.weight"]))
    assert torch.equal(model.classifier[3].weight, head)  # sized to 7 classes, fresh
    kept = [k for k in imagenet if not k.startswith(("features.0.0.", "classifier.3."))]
    assert len(kept) > 100 and all(torch.equal(state[k], imagenet[k]) for k in kept)


def test_rgb_data_with_1000_classes_loads_every_tensor(offline_torch_hub) -> None:
    imagenet = _imagenet(SMALL, offline_torch_hub, SMALL_FILE)
    info = dataclasses.replace(CIFAR, num_classes=1000, classes=())
    model = _model(f"torchvision:{SMALL}", info)
    _load(model, "MobileNet_V3_Small_Weights.IMAGENET1K_V1", f"torchvision:{SMALL}")
    assert _same(model.state_dict(), imagenet)


def test_auxiliary_heads_in_pretrained_weights_are_dropped(offline_torch_hub) -> None:
    imagenet = _imagenet("googlenet", offline_torch_hub, "googlenet-1378be20.pth",
                         aux_logits=True, init_weights=True)
    assert any(k.startswith("aux1.") for k in imagenet)
    model = _model("torchvision:googlenet", CIFAR)
    _load(model, "IMAGENET1K_V1", "torchvision:googlenet")
    assert torch.equal(model.conv1.conv.weight, imagenet["conv1.conv.weight"])


def test_an_unknown_weights_name_lists_the_known_ones() -> None:
    assert _error(_model(f"torchvision:{SMALL}", CIFAR), "IMAGENET9K", f"torchvision:{SMALL}") \
        == f"torchvision:{SMALL} has no weights 'IMAGENET9K'; it has IMAGENET1K_V1, DEFAULT"


def test_missing_weights_offline_say_which_file_to_put_where(offline_torch_hub,
                                                            monkeypatch) -> None:
    def offline(*args: object, **kwargs: object) -> None:
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(hubcache, "fetch_url", offline)
    model = _model(f"torchvision:{SMALL}", CIFAR)
    url = f"https://download.pytorch.org/models/{SMALL_FILE}"
    assert _error(model, "DEFAULT", f"torchvision:{SMALL}") == (
        f"{SMALL} IMAGENET1K_V1 weights are not in the torch hub cache (download failed: "
        f"<urlopen error [Errno -3] Temporary failure in name resolution>): download {url} "
        f"on a machine with internet and put it at {offline_torch_hub / SMALL_FILE}")
    assert "(downloads are off)" in _error(model, "DEFAULT", f"torchvision:{SMALL}",
                                           download=False)


def test_a_download_reports_progress_and_checks_the_hash(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(urllib.request, "urlopen", REAL_URLOPEN)  # file:// only, below
    payload = b"w" * (3 * hubcache.CHUNK_BYTES + 5)
    served = tmp_path / "served.pth"
    served.write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    weights = hubcache.WeightsFile(SMALL, "IMAGENET1K_V1", served.as_uri(),
                                   tmp_path / "cache" / f"small-{digest[:8]}.pth")
    monkeypatch.setattr(hubcache, "fetch_url", REAL_FETCH)
    reports: list = []
    assert hubcache.ensure_weights(weights, progress=reports.append) == weights.path
    assert weights.path.read_bytes() == payload
    assert reports[0].done_bytes == 0 and reports[0].total_bytes == len(payload)
    assert reports[-1].done_bytes == len(payload)
    assert reports[-1].text == (f"Downloading the {SMALL} IMAGENET1K_V1 weights: "
                                f"3.1 of 3.1 MB")
    wrong = dataclasses.replace(weights, path=tmp_path / "cache" / "small-00000000.pth")
    with pytest.raises(ConfigError, match="download failed: .* has sha256 "):
        hubcache.ensure_weights(wrong)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [weights.path.name]
