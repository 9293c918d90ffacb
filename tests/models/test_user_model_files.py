"""PATH.py:NAME: a model file no one on the project wrote, imported and built on the hub,
and each way such a file can be wrong, with the error it gets."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from computeshare_desktop.data import DatasetInfo, dataset_info
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models import (build_model_from_spec, check_model_outputs,
                                         flat_parameters, parse_model_spec)
from computeshare_desktop.models.userfile import build_from_file
from helpers.data import TableInfo

MNIST = dataset_info("mnist")
CIFAR = dataset_info("cifar10")

RESIDUAL_NET = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.act = nn.GELU()

    def forward(self, x):
        y = self.act(self.bn1(self.conv1(x)))
        return self.act(x + self.bn2(self.conv2(y)))


class ResNetish(nn.Module):
    def __init__(self, num_classes, in_channels, width=8, dropout=0.25):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 3, padding=1), nn.GELU())
        self.blocks = nn.Sequential(Block(width), Block(width))
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(width, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x)).mean(dim=(2, 3))
        return self.fc(self.drop(x))


def make_net(**kwargs):
    return ResNetish(kwargs["num_classes"], kwargs["in_channels"], width=4)


def helper():
    return 42
'''


def _write(folder: Path, text: str, name: str = "net.py") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _build(path: Path, name: str, info: DatasetInfo = MNIST, seed: int | None = 0) -> nn.Module:
    return build_model_from_spec(parse_model_spec(f"{path}:{name}"), info, seed=seed)


def _error(path: Path, name: str, info: DatasetInfo = MNIST) -> str:
    with pytest.raises(ConfigError) as caught:
        _build(path, name, info)
    return str(caught.value)


def test_a_class_with_residual_blocks_batchnorm_gelu_and_dropout_trains(tmp_path) -> None:
    model = _build(_write(tmp_path, RESIDUAL_NET), "ResNetish", CIFAR)
    assert model.stem[0].in_channels == 3 and model.fc.out_features == 10
    assert all(p.device.type == "cpu" and p.dtype == torch.float32 for p in model.parameters())
    images, labels = torch.randn(8, 3, 32, 32), torch.arange(8) % 10
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.blocks[0].bn1.running_mean.clone()
    for _ in range(3):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
    assert not torch.equal(model.blocks[0].bn1.running_mean, before)
    assert all(p.grad is not None for p in model.parameters())


def test_the_seed_alone_decides_the_weights(tmp_path) -> None:
    path = _write(tmp_path, RESIDUAL_NET)
    state = torch.random.get_rng_state()
    first = _build(path, "ResNetish", seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)
    torch.manual_seed(99)
    assert torch.equal(flat_parameters(first), flat_parameters(_build(path, "ResNetish", seed=3)))
    other = flat_parameters(_build(path, "ResNetish", seed=4))
    assert not torch.equal(flat_parameters(first), other)


def test_a_factory_with_only_kwargs_gets_every_argument(tmp_path) -> None:
    model = _build(_write(tmp_path, RESIDUAL_NET), "make_net")
    assert model.stem[0].in_channels == 1 and model.stem[0].out_channels == 4


def test_only_the_arguments_a_builder_names_are_given(tmp_path) -> None:
    path = _write(tmp_path, '''
        from torch import nn
        SEEN = []

        def small(image_size, num_classes):
            SEEN.append((image_size, num_classes))
            return nn.Sequential(nn.Flatten(), nn.Linear(image_size * image_size, num_classes))
        ''')
    model = _build(path, "small")
    assert model[1].in_features == 28 * 28 and model[1].out_features == 10


def test_a_non_square_image_size_is_a_pair(tmp_path) -> None:
    path = _write(tmp_path, '''
        from torch import nn

        def wide(image_size, in_channels, num_classes):
            height, width = image_size
            return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * height * width,
                                                         num_classes))
        ''')
    info = dataclasses.replace(CIFAR, height=24, width=40)
    assert _build(path, "wide", info)[1].in_features == 3 * 24 * 40


def test_a_table_model_gets_in_features_and_no_image_arguments(tmp_path) -> None:
    path = _write(tmp_path, '''
        from torch import nn

        def mlp(in_features, num_classes, **rest):
            assert "in_channels" not in rest and "image_size" not in rest, rest
            return nn.Sequential(nn.Linear(in_features, 16), nn.ReLU(),
                                 nn.Linear(16, num_classes))
        ''')
    table = TableInfo("iris", 1, 1, 1, 3, (0.0,), (1.0,), in_features=4)
    assert _build(path, "mlp", table)(torch.randn(5, 4)).shape == (5, 3)


def test_a_sibling_module_imports_and_sys_path_is_left_as_it_was(tmp_path) -> None:
    _write(tmp_path, "from torch import nn\nWIDTH = 5\n", name="layers_of_mine.py")
    path = _write(tmp_path, '''
        from torch import nn
        from layers_of_mine import WIDTH

        class Net(nn.Module):
            def __init__(self, num_classes):
                super().__init__()
                self.body = nn.Sequential(nn.Flatten(), nn.Linear(784, WIDTH), nn.ReLU())
                self.head = nn.Linear(WIDTH, num_classes)

            def forward(self, x):
                return self.head(self.body(x))
        ''')
    before = list(sys.path)
    assert _build(path, "Net").body[1].out_features == 5
    assert sys.path == before


def test_an_edited_file_is_read_again(tmp_path) -> None:
    text = "from torch import nn\ndef net(num_classes):\n    return nn.Linear(784, {})\n"
    path = _write(tmp_path, text.format(10))
    assert build_from_file(path, "net", {"num_classes": 10}).out_features == 10
    _write(tmp_path, text.format(7))
    assert build_from_file(path, "net", {"num_classes": 10}).out_features == 7


# ------------------------------------------------------------------------ bad input
def test_a_missing_file(tmp_path) -> None:
    missing = tmp_path / "nope.py"
    assert _error(missing, "Net") == f"model file {missing} does not exist"


def test_a_missing_name_lists_what_the_file_defines(tmp_path) -> None:
    message = _error(_write(tmp_path, RESIDUAL_NET), "Resnetish")
    assert message == (f"{tmp_path / 'net.py'} has no 'Resnetish'; it defines Block "
                       f"(nn.Module class), ResNetish (nn.Module class), make_net (function), "
                       f"helper (function)")


def test_a_file_that_defines_nothing_says_so(tmp_path) -> None:
    assert _error(_write(tmp_path, "import torch\nX = 1\n"), "Net").endswith(
        "has no 'Net'; it defines no nn.Module class or function")


def test_a_class_needing_unknown_arguments_is_named(tmp_path) -> None:
    path = _write(tmp_path, '''
        from torch import nn

        class Net(nn.Module):
            def __init__(self, num_classes, depth, width=4):
                super().__init__()
        ''')
    assert _error(path, "Net") == (
        "net.py:Net needs an argument 'depth', which ComputeShare cannot give: it gives "
        "num_classes, in_channels, image_size by name (give depth a default in the file)")


def test_an_import_error_shows_its_first_lines(tmp_path) -> None:
    path = _write(tmp_path, "import torch\n\nclass Net(nn.Module):\n    pass\n")
    message = _error(path, "Net")
    assert message.startswith(f"importing {path} failed:\nNameError: name 'nn' is not defined")
    assert f"{path}, line 3, in <module>" in message
    assert "frozen" not in message


def test_a_syntax_error_names_the_line(tmp_path) -> None:
    message = _error(_write(tmp_path, "def broken(:\n    pass\n"), "broken")
    assert "SyntaxError: " in message and "line 1" in message


def test_a_file_that_exits_is_an_error_not_an_exit(tmp_path) -> None:
    assert "SystemExit: 3" in _error(_write(tmp_path, "raise SystemExit(3)\n"), "Net")


def test_a_constructor_that_raises(tmp_path) -> None:
    path = _write(tmp_path, '''
        from torch import nn

        def net(num_classes):
            raise ValueError("only 100 classes, please")
        ''')
    message = _error(path, "net")
    assert message.startswith("net.py:net(num_classes=10) failed:\n"
                              "ValueError: only 100 classes, please")


@pytest.mark.parametrize("definition, message", [
    ("net = nn.Linear(784, 10)", "net.py:net is a model instance; name its class"),
    ("class net:\n    pass", "net.py:net is a type, not an nn.Module class"),
    ("net = 3", "net.py:net is a int, not an nn.Module class or a function"),
    ("def net():\n    return 3", "net.py:net() returned a int, not an nn.Module"),
])
def test_a_name_that_is_not_a_model(tmp_path, definition: str, message: str) -> None:
    path = _write(tmp_path, f"from torch import nn\n{definition}\n")
    assert _error(path, "net").startswith(message)


def test_an_output_that_does_not_match_the_classes(tmp_path) -> None:
    path = _write(tmp_path, '''
        from torch import nn

        def net(num_classes):
            return nn.Sequential(nn.Flatten(), nn.Linear(784, 7))
        ''')
    assert _error(path, "net") == (
        "the model returns torch.float32 (2, 7), expected float (2, 10) (batch, classes): "
        "size its last layer to the dataset's 10 classes")


def test_a_forward_that_raises_shows_its_first_lines(tmp_path) -> None:
    path = _write(tmp_path, '''
        from torch import nn

        def net(num_classes):
            return nn.Linear(100, num_classes)
        ''')
    message = _error(path, "net")
    assert message.startswith("the model fails on a batch of (2, 1, 28, 28) inputs (train "
                              "mode):\nRuntimeError: mat1 and mat2 shapes cannot be multiplied")


# ------------------------------------------------------------ check_model_outputs itself
class _Tuple(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x.flatten(1)[:, :10], x


class _Integers(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1)[:, :10].long()


def test_the_output_must_be_one_float_tensor() -> None:
    with pytest.raises(ConfigError, match=r"returns a tuple, expected one tensor of logits "
                                          r"shaped \(2, 10\)"):
        check_model_outputs(_Tuple(), MNIST)
    with pytest.raises(ConfigError, match=r"returns torch.int64 \(2, 10\), expected float"):
        check_model_outputs(_Integers(), MNIST)


def test_the_check_leaves_statistics_mode_and_rng_as_they_were() -> None:
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.Dropout(0.5),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10)).eval()
    buffers = [b.clone() for b in model.buffers()]
    state = torch.random.get_rng_state()
    check_model_outputs(model, MNIST)
    assert not model.training
    assert all(torch.equal(a, b) for a, b in zip(buffers, model.buffers(), strict=True))
    assert torch.equal(torch.random.get_rng_state(), state)


class _TrainOnly(nn.Module):
    """Fails in eval mode only, as a model with a train-mode-only branch would."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            raise RuntimeError("no eval path")
        return self.fc(x.flatten(1))


def test_both_modes_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"\(eval mode\):\nRuntimeError: no eval path"):
        check_model_outputs(_TrainOnly(), MNIST)
