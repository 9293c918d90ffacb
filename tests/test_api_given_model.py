"""What a module handed to ``host()`` is called: a bare ``nn.Sequential`` is
``python:Sequential``, never torch's own ``container.py``, which session.json then named as
the model's file (``evaluate trained_model.pth`` imported torch's source as the user's
and failed on its relative imports; ``--offer-code`` would have shipped it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from computeshare_desktop.api import module_spec
from computeshare_desktop.data import dataset_info
from computeshare_desktop.data.mapped import python_name
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.evaluation import load_state_model
from computeshare_desktop.hub.config import absolute_model, model_spec_valid
from computeshare_desktop.models import SpecKind, build_model_from_spec, parse_model_spec


class MineHere(nn.Module):
    """A class this file defines: the user's own file names it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)


@pytest.mark.parametrize("model", [
    nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)),
    nn.ModuleList([nn.Linear(2, 2)]),
    nn.Linear(4, 2),
])
def test_a_torch_class_is_named_python_colon_its_class(model: nn.Module) -> None:
    spec = module_spec(model)
    assert spec == f"python:{type(model).__name__}"
    parsed = parse_model_spec(spec)
    assert parsed.kind is SpecKind.GIVEN and parsed.label == spec and parsed.text == spec
    assert model_spec_valid(spec) and absolute_model(spec) == spec


def test_a_class_of_the_users_own_file_is_named_by_that_file() -> None:
    parsed = parse_model_spec(module_spec(MineHere()))
    assert parsed.kind is SpecKind.FILE and parsed.name == "MineHere"
    assert parsed.path is not None and parsed.path.samefile(__file__)


def test_a_class_typed_at_a_prompt_has_no_file_to_name() -> None:
    namespace: dict[str, object] = {"nn": nn}
    exec("class Typed(nn.Module):\n    pass\n", namespace)  # as in a REPL: no source file
    typed = namespace["Typed"]
    assert isinstance(typed, type)
    assert module_spec(typed()) == "python:Typed"


def test_building_a_given_model_again_says_what_to_do_instead(tmp_path: Path) -> None:
    info = dataset_info("mnist-sample")
    with pytest.raises(ConfigError, match=r"python:Sequential is a module that was handed "
                                          r"to host\(\) from Python.*trained_model\.pt2"):
        build_model_from_spec(parse_model_spec("python:Sequential"), info)
    state = tmp_path / "trained_model.pth"
    torch.save(nn.Sequential(nn.Flatten(), nn.Linear(784, 10)).state_dict(), state)
    with pytest.raises(ConfigError, match="handed to host"):  # evaluate's .pth path
        load_state_model(state, "python:Sequential", info)


def test_python_colon_needs_a_class_name() -> None:
    for text in ("python:", "python:not a name", "python:../net.py"):
        with pytest.raises(ConfigError):
            parse_model_spec(text)


def test_data_given_from_python_is_said_to_be_nowhere_on_disk() -> None:
    with pytest.raises(ConfigError, match="handed to host.*--dataset"):
        dataset_info(python_name("Stripes"))
    with pytest.raises(ConfigError, match="unknown dataset 'nope'"):
        dataset_info("nope")
