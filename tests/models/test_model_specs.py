"""parse_model_spec: the four forms of --model, Windows paths, and clear errors for the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models import MODELS, ModelSpec, SpecKind, parse_model_spec

PARSED = [
    ("simplenet", ModelSpec(SpecKind.BUILTIN, "simplenet")),
    ("  resnet18 ", ModelSpec(SpecKind.BUILTIN, "resnet18")),
    ("torchvision:resnet50", ModelSpec(SpecKind.TORCHVISION, "resnet50")),
    ("TorchVision:MobileNet_V3_Small", ModelSpec(SpecKind.TORCHVISION, "mobilenet_v3_small")),
    ("torchvision:vit_b_16", ModelSpec(SpecKind.TORCHVISION, "vit_b_16")),
    ("net.py:Net", ModelSpec(SpecKind.FILE, "Net", Path("net.py"))),
    ("models/my net.py:make_net", ModelSpec(SpecKind.FILE, "make_net", Path("models/my net.py"))),
    (r"C:\models\net.py:Net", ModelSpec(SpecKind.FILE, "Net", Path(r"C:\models\net.py"))),
    ("D:/work/Net.PY:Net", ModelSpec(SpecKind.FILE, "Net", Path("D:/work/Net.PY"))),
    ("model.pt2", ModelSpec(SpecKind.PROGRAM, "", Path("model.pt2"))),
    (r"C:\models\net.pt2", ModelSpec(SpecKind.PROGRAM, "", Path(r"C:\models\net.pt2"))),
]


@pytest.mark.parametrize("text, spec", PARSED, ids=[t for t, _ in PARSED])
def test_each_form_parses_and_prints_back(text: str, spec: ModelSpec) -> None:
    assert parse_model_spec(text) == spec
    assert parse_model_spec(spec.text) == spec
    assert str(spec) == spec.text


def test_every_builtin_parses_as_itself() -> None:
    assert [parse_model_spec(name).kind for name in MODELS] == [SpecKind.BUILTIN] * len(MODELS)


def test_a_home_folder_is_expanded() -> None:
    spec = parse_model_spec("~/net.py:Net")
    assert spec.path == Path.home() / "net.py"
    assert spec.label == "net.py:Net"


def test_labels_leave_out_the_folder() -> None:
    assert parse_model_spec("/a/b/net.py:Net").label == "net.py:Net"
    assert parse_model_spec("/a/b/model.pt2").label == "model.pt2"
    assert parse_model_spec("torchvision:resnet18").label == "torchvision:resnet18"


ERRORS = [
    ("", "--model is empty"),
    ("   ", "--model is empty"),
    ("vgg99", "unknown model 'vgg99'"),
    ("resnet50", r"did you mean torchvision:resnet50\?"),
    ("net.py", "name the class or function to build from net.py: net.py:NAME"),
    (r"C:\models\net.py", r"net.py:NAME"),
    ("net.py:", "'' in --model net.py: is not a Python name"),
    ("net.py:my-net", "'my-net' in --model net.py:my-net is not a Python name"),
    ("net.txt:Net", "unknown model"),
    ("torchvision:", "torchvision: needs an architecture"),
    ("torchvision:resnt50", r"unknown torchvision architecture 'resnt50'; did you mean "
                            r"torchvision:resnet50"),
    ("torchvision:fasterrcnn_resnet50_fpn", "is a detection model; ComputeShare trains image "
                                            "classifiers: e.g. resnet18, resnet50"),
    ("torchvision:deeplabv3_resnet50", "is a segmentation model"),
    ("torchvision:r3d_18", "is a video model"),
    ("torchvision:raft_small", "is an optical-flow model"),
    ("torchvision:quantized_resnet18", "is a quantized model"),
]


@pytest.mark.parametrize("text, message", ERRORS, ids=[t or "empty" for t, _ in ERRORS])
def test_bad_specs_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_model_spec(text)


def test_an_unknown_name_lists_every_form() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_model_spec("vgg99")
    assert str(caught.value).endswith("give a built-in name (simplenet, mlp, resnet18), "
                                      "torchvision:ARCH, PATH.py:NAME or PATH.pt2")
