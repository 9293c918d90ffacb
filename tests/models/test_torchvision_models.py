"""torchvision:ARCH across the families: the head sized to the classes, a 1-channel stem
that is the RGB one summed, seeded weights, and a clear refusal of an image size an
architecture cannot take (found by a forward, with a size that works)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from computeshare_desktop.data import dataset_info
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models import build_model_from_spec, flat_parameters, parse_model_spec
from computeshare_desktop.models.vision import fold_to_gray

MNIST = dataset_info("mnist")  # 1 × 28 × 28, 10 classes
GRAY32 = dataclasses.replace(MNIST, name="gray32", height=32, width=32, num_classes=7,
                            classes=())
RGB32 = dataset_info("cifar100")  # 3 × 32 × 32, 100 classes

# (architecture, where its head is, where its stem is): one of each family
FAMILIES = [
    ("resnet18", "fc", "conv1"),
    ("mobilenet_v3_small", "classifier.3", "features.0.0"),
    ("efficientnet_b0", "classifier.1", "features.0.0"),
    ("convnext_tiny", "classifier.2", "features.0.0"),
    ("densenet121", "classifier", "features.conv0"),
    ("regnet_x_400mf", "fc", "stem.0"),
    ("shufflenet_v2_x0_5", "fc", "conv1.0"),
    ("squeezenet1_1", "classifier.1", "features.0"),  # a 1×1 conv head, no Linear
    ("googlenet", "fc", "conv1.conv"),  # no auxiliary heads: logits in train mode too
    ("swin_t", "head", "features.0.0"),
]


def _build(arch: str, info=GRAY32, seed: int | None = 0) -> nn.Module:
    return build_model_from_spec(parse_model_spec(f"torchvision:{arch}"), info, seed=seed)


def _out_size(layer: nn.Module) -> int:
    return layer.out_features if isinstance(layer, nn.Linear) else layer.out_channels


@pytest.mark.parametrize("arch, head, stem", FAMILIES, ids=[a for a, _, _ in FAMILIES])
def test_each_family_gets_its_head_and_a_gray_stem(arch: str, head: str, stem: str) -> None:
    gray, rgb = _build(arch), _build(arch, dataclasses.replace(GRAY32, channels=3,
                                                               mean=(0.5,) * 3, std=(0.5,) * 3))
    assert _out_size(gray.get_submodule(head)) == 7
    gray_stem, rgb_stem = gray.get_submodule(stem), rgb.get_submodule(stem)
    assert (gray_stem.in_channels, rgb_stem.in_channels) == (1, 3)
    assert torch.equal(gray_stem.weight, fold_to_gray(rgb_stem.weight))
    assert [n for n, m in gray.named_modules() if isinstance(m, nn.Conv2d)
            and m.in_channels == 3] == []
    gray.train()
    logits = gray(torch.randn(4, 1, 32, 32))
    assert logits.shape == (4, 7)
    logits.sum().backward()
    assert gray_stem.weight.grad is not None


def test_vit_takes_its_own_size_with_a_gray_stem_and_its_head_sized() -> None:
    info = dataclasses.replace(GRAY32, height=224, width=224)
    model = _build("vit_b_32", info)
    assert model.conv_proj.in_channels == 1 and model.heads.head.out_features == 7


def test_rgb_data_keeps_the_stem_and_the_seed_decides_the_weights() -> None:
    state = torch.random.get_rng_state()
    first = _build("mobilenet_v3_small", RGB32, seed=5)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert first.features[0][0].in_channels == 3 and first.classifier[3].out_features == 100
    torch.manual_seed(1)
    again = flat_parameters(_build("mobilenet_v3_small", RGB32, seed=5))
    assert torch.equal(flat_parameters(first), again)
    assert not torch.equal(flat_parameters(first),
                           flat_parameters(_build("mobilenet_v3_small", RGB32, seed=6)))


def test_28_px_trains_where_the_architecture_allows_it() -> None:
    assert _build("resnet18", MNIST)(torch.randn(2, 1, 28, 28)).shape == (2, 10)


@pytest.mark.parametrize("arch, size, reason", [
    ("vgg11", 32, "RuntimeError: Given input size: (512x1x1)"),
    ("densenet121", 32, "RuntimeError: Given input size: (512x1x1)"),
    ("alexnet", 64, "RuntimeError: Given input size: (192x2x2)"),
    ("vit_b_16", 224, "AssertionError: Wrong image height! Expected 224 but got 28!"),
])
def test_an_architecture_that_needs_larger_images_says_which_size(arch: str, size: int,
                                                                 reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _build(arch, MNIST)
    message = str(caught.value)
    assert message.startswith(f"torchvision:{arch} does not take 28×28 images ({reason}")
    assert message.endswith(f"it works on {size}×{size}: add --image-size {size}")


def test_an_architecture_that_no_size_helps_keeps_its_error(monkeypatch) -> None:
    from computeshare_desktop.models import vision
    monkeypatch.setattr(vision, "SIZES_TRIED", (32,))
    with pytest.raises(ConfigError, match=r"^the model fails on a batch of \(2, 1, 28, 28\)"):
        _build("vit_b_16", MNIST)


def test_images_with_other_channel_counts_and_tables_are_refused() -> None:
    four = dataclasses.replace(RGB32, channels=4, mean=(0.5,) * 4, std=(0.5,) * 4)
    with pytest.raises(ConfigError, match="takes 1- or 3-channel images; cifar100 has 4"):
        _build("resnet18", four)
    from helpers.data import TableInfo
    table = TableInfo("iris", 1, 1, 1, 3, (0.0,), (1.0,), in_features=4)
    with pytest.raises(ConfigError, match="torchvision:resnet18 takes images; iris is a table"):
        _build("resnet18", table)
