"""simplenet at any image size: MNIST and CIFAR exactly as before, larger images averaged
down to a 5×5 map so fc1 keeps 500 inputs and SGD at the default rate stays stable."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from computeshare_desktop.data import DatasetInfo, dataset_info
from computeshare_desktop.models import build_model, fingerprint, parameter_count
from computeshare_desktop.models.nets import SimpleNet

# Logits of seed-0 simplenet on MNIST for a fixed input, taken before large maps were pooled.
MNIST_LOGITS = (-0.08993861824274063, -0.037318505346775055, 0.13072840869426727,
                0.12132930010557175, 0.01783839613199234, -0.06571812182664871,
                0.029405727982521057, -0.091803178191185, -0.057557642459869385,
                0.1006244570016861)


def _images(height: int, width: int, channels: int = 3, classes: int = 4) -> DatasetInfo:
    return DatasetInfo("folder", channels, height, width, classes, (0.5,) * channels,
                       (0.25,) * channels)


def _simplenet(info: DatasetInfo) -> SimpleNet:
    model = build_model("simplenet", info, seed=0)
    assert isinstance(model, SimpleNet)
    return model


def sgd_stays_finite(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
                     steps: int) -> None:
    """``steps`` of the two-worker default recipe (SGD, lr 0.02, momentum 0.9) on one batch:
    every loss finite and under 10."""
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert torch.isfinite(loss) and loss.item() < 10


def test_mnist_and_cifar_are_unchanged() -> None:
    mnist = _simplenet(dataset_info("mnist"))
    assert parameter_count(mnist) == 21_840 and mnist.fc1.in_features == 320
    assert fingerprint(mnist) == "0d5f6976a585dc3b"
    x = torch.randn(2, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = mnist(x)
    assert logits[0].tolist() == pytest.approx(MNIST_LOGITS, abs=1e-6)
    cifar = _simplenet(dataset_info("cifar10"))
    assert cifar.fc1.in_features == 500 and fingerprint(cifar) == "fea63d0ba52fcb43"


@pytest.mark.parametrize(("height", "width", "inputs"),
                         [(224, 224, 500), (80, 120, 500), (28, 60, 400), (16, 224, 100)])
def test_large_maps_are_pooled_to_at_most_5x5(height: int, width: int, inputs: int) -> None:
    model = _simplenet(_images(height, width))
    assert model.fc1.in_features == inputs
    assert model(torch.zeros(2, 3, height, width)).shape == (2, 4)


def test_sgd_at_224_px_stays_finite() -> None:
    """The default recipe for two workers (lr 0.02, momentum 0.9) used to blow up at 224 px:
    fc1 had 56,180 inputs."""
    model = _simplenet(_images(224, 224))
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(8, 3, 224, 224, generator=gen)
    y = torch.randint(4, (8,), generator=gen)
    sgd_stays_finite(model, x, y, steps=6)


def test_mlp_averages_large_images_down_and_keeps_mnist_and_cifar() -> None:
    mnist = build_model("mlp", dataset_info("mnist"), seed=0)
    assert mnist.fc1.in_features == 784 and parameter_count(mnist) == 235_146
    assert build_model("mlp", dataset_info("cifar10"), seed=0).fc1.in_features == 3072
    for height, width, inputs in ((224, 224, 3072), (120, 80, 3072), (20, 300, 1920)):
        model = build_model("mlp", _images(height, width), seed=0)
        assert model.fc1.in_features == inputs
        assert model(torch.zeros(2, 3, height, width)).shape == (2, 4)


def test_mlp_sgd_at_224_px_stays_finite() -> None:
    """fc1 had 150,528 inputs at 224 px: SGD at lr 0.02, momentum 0.9 went to NaN."""
    model = build_model("mlp", _images(224, 224), seed=0)
    gen = torch.Generator().manual_seed(1)
    # Photos' pixels move together: each image a brightness of its own plus a little noise
    # (what made the 150,528 inputs' steps add up), its class by how bright it is.
    bright = torch.randn(16, 1, 1, 1, generator=gen) * 1.5
    x = bright + 0.1 * torch.randn(16, 3, 224, 224, generator=gen)
    y = (bright.flatten() > 0).long() + 2 * (bright.flatten().abs() > 1).long()
    sgd_stays_finite(model, x, y, steps=20)
