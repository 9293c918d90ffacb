"""The model registry: sizes, seeded initialisation, fingerprints, flat vectors, no buffers."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from computeshare_desktop.data import DATASETS, dataset_info, normalize
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models import (
    MODELS,
    build_model,
    fingerprint,
    flat_gradients,
    flat_parameters,
    load_flat_parameters,
    parameter_count,
)
from computeshare_desktop.models.nets import SimpleNet

MNIST = dataset_info("mnist")
CIFAR10 = dataset_info("cifar10")


def _states_equal(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_registry_names() -> None:
    assert MODELS == ("simplenet", "mlp", "resnet18")
    with pytest.raises(ConfigError, match="simplenet"):
        build_model("vgg16", MNIST)


def test_parameter_counts() -> None:
    assert parameter_count(build_model("simplenet", MNIST)) == 21_840
    simple_cifar = build_model("simplenet", CIFAR10)
    assert isinstance(simple_cifar, SimpleNet)
    assert simple_cifar.fc1.in_features == 500
    assert parameter_count(build_model("mlp", MNIST)) == 784 * 256 + 256 + 256 * 128 + 128 + 1290
    assert parameter_count(build_model("resnet18", CIFAR10)) == 11_173_962


def test_simplenet_rejects_tiny_images() -> None:
    info = dataset_info("mnist")
    tiny = type(info)("tiny", 1, 8, 8, 10, (0.5,), (0.5,))
    with pytest.raises(ConfigError):
        build_model("simplenet", tiny)


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("name", ["simplenet", "mlp"])
def test_small_models_shapes_and_no_buffers(name: str, dataset: str) -> None:
    info = dataset_info(dataset)
    model = build_model(name, info, seed=0)
    assert list(model.buffers()) == []
    assert all(p.dtype == torch.float32 and p.device.type == "cpu" for p in model.parameters())
    images = torch.randint(0, 256, (2, *info.shape), dtype=torch.uint8)
    assert model(normalize(images, info)).shape == (2, info.num_classes)


@pytest.mark.parametrize("dataset", ["mnist-sample", "cifar100"])
def test_resnet18_shapes_and_no_buffers(dataset: str) -> None:
    info = dataset_info(dataset)
    model = build_model("resnet18", info, seed=0)
    assert list(model.buffers()) == []
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
    images = torch.randint(0, 256, (2, *info.shape), dtype=torch.uint8)
    with torch.no_grad():
        assert model(normalize(images, info)).shape == (2, info.num_classes)


def test_resnet18_has_no_buffers_for_any_dataset() -> None:
    shapes = {(dataset_info(n).channels, dataset_info(n).num_classes): n for n in DATASETS}
    for name in shapes.values():
        assert list(build_model("resnet18", dataset_info(name)).buffers()) == []


@pytest.mark.parametrize("name", MODELS)
def test_seed_is_deterministic_and_leaves_global_rng_alone(name: str) -> None:
    state = torch.random.get_rng_state()
    first = build_model(name, CIFAR10, seed=7)
    assert torch.equal(torch.random.get_rng_state(), state)
    torch.manual_seed(12345)  # a different global state must not matter
    second = build_model(name, CIFAR10, seed=7)
    assert _states_equal(first, second)
    other = build_model(name, CIFAR10, seed=8)
    assert not torch.equal(flat_parameters(first), flat_parameters(other))


def test_unseeded_models_use_the_global_rng() -> None:
    a, b = build_model("mlp", MNIST), build_model("mlp", MNIST)
    assert not torch.equal(flat_parameters(a), flat_parameters(b))


def test_fingerprint_follows_architecture_only() -> None:
    a = build_model("simplenet", MNIST, seed=0)
    b = build_model("simplenet", MNIST, seed=1)
    assert fingerprint(a) == fingerprint(b)
    assert len(fingerprint(a)) == 16 and int(fingerprint(a), 16) >= 0
    assert fingerprint(a) != fingerprint(build_model("simplenet", CIFAR10))  # shape change
    assert fingerprint(a) != fingerprint(build_model("simplenet", dataset_info("emnist")))
    assert fingerprint(a) != fingerprint(build_model("mlp", MNIST))
    renamed = torch.nn.Sequential(*build_model("simplenet", MNIST).children())
    assert fingerprint(renamed) != fingerprint(a)  # same shapes, other names


def test_flat_parameters_round_trip() -> None:
    source = build_model("simplenet", MNIST, seed=0)
    target = build_model("simplenet", MNIST, seed=1)
    flat = flat_parameters(source)
    assert flat.dtype == torch.float32 and flat.dim() == 1 and flat.numel() == 21_840
    names = [n for n, _ in source.named_parameters()]
    assert flat[:250].equal(source.get_parameter(names[0]).detach().reshape(-1))
    load_flat_parameters(target, flat)
    assert _states_equal(source, target)
    flat.add_(1.0)  # a copy: changing it leaves the model alone
    assert not torch.equal(flat, flat_parameters(source))
    with pytest.raises(ValueError):
        load_flat_parameters(target, flat[:-1])
    with pytest.raises(ValueError):
        load_flat_parameters(target, flat.reshape(2, -1))


def test_flat_gradients_match_parameters_and_fill_zeros() -> None:
    info = dataset_info("mnist-sample")
    model = build_model("simplenet", info, seed=0)
    assert isinstance(model, SimpleNet)
    assert torch.equal(flat_gradients(model), torch.zeros(21_840))
    images = torch.randint(0, 256, (4, *info.shape), dtype=torch.uint8)
    loss = F.cross_entropy(model(normalize(images, info)), torch.tensor([0, 1, 2, 3]))
    loss.backward()  # type: ignore[no-untyped-call]
    model.fc2.bias.grad = None
    grads = flat_gradients(model)
    assert grads.shape == (21_840,) and grads.dtype == torch.float32
    assert torch.equal(grads[-10:], torch.zeros(10))
    conv1_grad = model.conv1.weight.grad
    assert conv1_grad is not None and torch.equal(grads[:250], conv1_grad.reshape(-1))
