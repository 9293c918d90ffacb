"""Model specs: what ``--model`` names, parsed, and the model built from it on the hub.

A spec is one of

- a built-in name (``simplenet``, ``mlp``, ``resnet18``: ``registry.MODELS``);
- ``torchvision:ARCH``, an image classifier of ``torchvision.models`` (``vision.py``);
- ``PATH.py:NAME``, a module class or function in the user's Python file (``userfile.py``);
- ``PATH.pt2``, a program saved with ``torch.export.save`` (``program.py``);
- ``python:NAME``, a module handed to ``host()`` from Python whose class no file of the
  user's defines (a bare ``nn.Sequential``, a class typed at a prompt): what session.json
  and workers call it. Nothing can build it again from that name.

Parsing reads the text only (and torchvision's list of names); files are opened when the
model is built. Building runs the user's code: only the hub does it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from computeshare_desktop.data import DatasetInfo
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models import vision
from computeshare_desktop.models.checks import (builder_arguments, check_model_outputs,
                                                sample_shape)
from computeshare_desktop.models.program import load_program
from computeshare_desktop.models.registry import MODELS, build_model, build_seeded
from computeshare_desktop.models.userfile import build_from_file

FORMS = "a built-in name ({}), torchvision:ARCH, PATH.py:NAME or PATH.pt2"
GIVEN_PREFIX = "python:"  # a module handed to host(), as data given from Python is named


class SpecKind(enum.Enum):
    """Where a model comes from."""

    BUILTIN = "builtin"  # one of registry.MODELS
    TORCHVISION = "torchvision"  # an image classifier of torchvision.models
    FILE = "file"  # a class or function in the user's Python file
    PROGRAM = "program"  # a torch.export program the user saved
    GIVEN = "given"  # a module handed to host() from Python, that no file of theirs builds


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed ``--model``: its kind, the name (built-in, architecture, or the class or
    function in the file; empty for a program) and the file, for FILE and PROGRAM."""

    kind: SpecKind
    name: str
    path: Path | None = None

    @property
    def text(self) -> str:
        """The spec as the user writes it (``parse_model_spec(spec.text) == spec``)."""
        match self.kind:
            case SpecKind.BUILTIN:
                return self.name
            case SpecKind.TORCHVISION:
                return vision.PREFIX + self.name
            case SpecKind.FILE:
                return f"{self.path}:{self.name}"
            case SpecKind.PROGRAM:
                return str(self.path)
            case SpecKind.GIVEN:
                return GIVEN_PREFIX + self.name

    @property
    def label(self) -> str:
        """A short name for people: the text without the file's folder."""
        if self.path is None:
            return self.text
        return f"{self.path.name}:{self.name}" if self.kind is SpecKind.FILE else self.path.name

    def __str__(self) -> str:
        return self.text


def parse_model_spec(text: str) -> ModelSpec:
    """Read a ``--model`` value. A path's name is split from it at the last colon after
    ``.py``, so ``C:\\models\\net.py:Net`` is the file ``C:\\models\\net.py`` and ``Net``.

    Raises:
        ConfigError: empty; ``torchvision:`` without a classifier's name; a ``.py`` file
            without ``:NAME`` or with a name that is not an identifier; anything else that
            is not a built-in name.
    """
    spec = text.strip()
    if not spec:
        raise ConfigError(f"--model is empty; give {_forms()}")
    if spec.lower().startswith(vision.PREFIX):
        arch = spec[len(vision.PREFIX):].strip()
        if not arch:
            raise ConfigError("torchvision: needs an architecture, e.g. torchvision:resnet50")
        return ModelSpec(SpecKind.TORCHVISION, vision.check_arch(arch.lower()))
    if spec.startswith(GIVEN_PREFIX) and spec[len(GIVEN_PREFIX):].isidentifier():
        return ModelSpec(SpecKind.GIVEN, spec[len(GIVEN_PREFIX):])
    if spec.lower().endswith(".pt2"):
        return ModelSpec(SpecKind.PROGRAM, "", Path(spec).expanduser())
    if spec.lower().endswith(".py"):
        raise ConfigError(f"name the class or function to build from {spec}: {spec}:NAME")
    head, colon, name = spec.rpartition(":")
    if colon and head.lower().endswith(".py"):
        if not name.isidentifier():
            raise ConfigError(f"{name!r} in --model {spec} is not a Python name; "
                              f"give PATH.py:NAME, NAME a class or function in the file")
        return ModelSpec(SpecKind.FILE, name, Path(head).expanduser())
    if spec in MODELS:
        return ModelSpec(SpecKind.BUILTIN, spec)
    raise ConfigError(f"unknown model {spec!r}{_torchvision_hint(spec)}; give {_forms()}")


def model_label(text: str) -> str:
    """A ``--model`` value as anyone may read it (a session list, the LAN's adverts): a
    file's name without the folders above it, whichever system wrote the path
    (``/home/ann/net.py:Net`` and ``C:\\ann\\net.py:Net`` both read ``net.py:Net``); a name
    as it is."""
    return text.replace("\\", "/").rpartition("/")[2]


def _forms() -> str:
    return FORMS.format(", ".join(MODELS))


def _torchvision_hint(spec: str) -> str:
    if ":" not in spec and spec.lower() in vision.classifiers():
        return f" (did you mean {vision.PREFIX}{spec.lower()}?)"
    return ""


def build_model_from_spec(spec: ModelSpec, info: DatasetInfo, *,
                          seed: int | None = None) -> nn.Module:
    """Build the model on the CPU for ``info``'s inputs and classes, then run one sample
    batch through it (``checks.check_model_outputs``). Hub side only: a FILE spec runs the
    user's code, a PROGRAM spec unpickles the user's file. With a seed the initial
    weights depend on it alone (a program brings its own weights).

    Raises:
        ConfigError: as each kind's builder says, and as the output check says; for a
            torchvision architecture that refuses the data's image size, a message that
            names it and suggests --image-size; a GIVEN spec (nothing builds it).
    """
    match spec.kind:
        case SpecKind.BUILTIN:
            model = build_model(spec.name, info, seed=seed)
        case SpecKind.TORCHVISION:
            model = build_seeded(lambda: vision.build_torchvision(spec.name, info), seed)
            vision.check_image_size(spec.name, model, info)
            return model
        case SpecKind.FILE:
            assert spec.path is not None
            path, offered = spec.path, builder_arguments(info)
            model = build_seeded(lambda: build_from_file(path, spec.name, offered), seed)
        case SpecKind.PROGRAM:
            assert spec.path is not None
            model = load_program(spec.path, sample_shape(info))
        case SpecKind.GIVEN:
            raise ConfigError(
                f"{spec.text} is a module that was handed to host() from Python: nothing "
                f"can build it again from that name. Load trained_model.pth into your own "
                f"{spec.name}, use trained_model.pt2, or give --model PATH.py:NAME")
    check_model_outputs(model, info)
    return model
