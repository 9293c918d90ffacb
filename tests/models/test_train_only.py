"""--train-only PREFIX[,PREFIX]: the rest is frozen, prefixes match on module boundaries,
one that matches nothing lists the model's parts, and frozen parameters never travel."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from computeshare_desktop.data import dataset_info
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models import (build_model_from_spec, flat_parameters, freeze_except,
                                         parameter_count, parse_model_spec, parse_prefixes)

CIFAR = dataset_info("cifar10")


class Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.fc = nn.Linear(4, 3)
        self.fcx = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.scale = nn.Parameter(torch.ones(1))


def _trainable(model: nn.Module) -> list[str]:
    return [n for n, p in model.named_parameters() if p.requires_grad]


def test_prefixes_match_whole_module_names() -> None:
    model = Heads()
    frozen = freeze_except(model, ["fc"])
    assert _trainable(model) == ["fc.weight", "fc.bias"]
    assert frozen == ["scale", "body.weight", "body.bias", "fcx.weight", "fcx.bias"]


def test_several_prefixes_a_parameter_and_a_trailing_dot() -> None:
    model = Heads()
    freeze_except(model, ["fcx.", "scale", "body.bias"])
    assert _trainable(model) == ["scale", "body.bias", "fcx.weight", "fcx.bias"]


def test_what_the_model_froze_itself_stays_frozen_and_is_not_listed() -> None:
    model = Heads()
    model.fc.bias.requires_grad_(False)
    assert "fc.bias" not in freeze_except(model, ["fc"])
    assert _trainable(model) == ["fc.weight"]


def test_a_prefix_that_matches_nothing_lists_the_top_level_parts() -> None:
    model = Heads()
    for prefix in ("f", "act", "head"):
        with pytest.raises(ConfigError) as caught:
            freeze_except(model, [prefix])
        assert str(caught.value) == (f"--train-only {prefix!r} matches no parameter of the "
                                     f"model; its top-level parts with parameters: scale, "
                                     f"body, fc, fcx")
    assert _trainable(model) == [n for n, _ in model.named_parameters()]  # nothing changed


def test_no_prefix_is_an_error() -> None:
    with pytest.raises(ConfigError, match="needs module names"):
        freeze_except(Heads(), [])


@pytest.mark.parametrize("text, prefixes", [
    ("fc", ("fc",)), ("layer4, fc", ("layer4", "fc")), ("classifier.", ("classifier",))])
def test_parse_prefixes(text: str, prefixes: tuple[str, ...]) -> None:
    assert parse_prefixes(text) == prefixes


@pytest.mark.parametrize("text", ["", " ", "fc,", ",fc", "fc,,layer4"])
def test_parse_prefixes_refuses_empty_names(text: str) -> None:
    with pytest.raises(ConfigError, match="give module names separated by commas"):
        parse_prefixes(text)


def test_fine_tuning_the_head_of_a_torchvision_model_sends_only_the_head() -> None:
    model = build_model_from_spec(parse_model_spec("torchvision:resnet18"), CIFAR, seed=0)
    freeze_except(model, parse_prefixes("fc"))
    assert parameter_count(model) == 512 * 10 + 10
    assert flat_parameters(model).numel() == 5130
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    assert model.conv1.weight.grad is None and model.fc.weight.grad is not None
