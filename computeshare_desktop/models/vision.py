"""torchvision's image classifiers (``torchvision:ARCH``), sized to a dataset.

Every classification builder in ``torchvision.models`` takes ``num_classes``, so the head
(``fc``, ``classifier[-1]``, ``heads.head``, squeezenet's 1×1 conv ...) is built to the
dataset's classes by torchvision itself, with its own initialisation. For 1-channel data the
stem (the one ``Conv2d`` that reads 3 channels) becomes a 1-channel conv whose kernels are
the sum of the RGB ones, the same fold pretrained weights get (``adapt_state_dict``).
Whether an architecture takes the data's image size is found by a real forward, not a table.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from computeshare_desktop.data import DatasetInfo
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models.checks import check_model_outputs, first_lines, refuse_table

PREFIX = "torchvision:"
IMAGENET_CLASSES = 1000  # the head of every pretrained classification weights file
RGB = 3
# Square sizes tried, smallest first, when an architecture refuses the data's size, to
# suggest one that works (alexnet needs 63 px, inception_v3 75, vit and maxvit 224).
SIZES_TRIED = (32, 64, 96, 128, 160, 192, 224, 256, 299)
# googlenet and inception_v3 return their auxiliary heads' outputs too in training mode (a
# named tuple, not logits) unless told not to, and warn unless the initialisation is named.
_BUILD_KWARGS: dict[str, dict[str, Any]] = {
    "googlenet": {"aux_logits": False, "init_weights": True},
    "inception_v3": {"aux_logits": False, "init_weights": True},
}
# Their pretrained weights still hold those heads: dropped on loading, as torchvision does.
AUXILIARY: dict[str, tuple[str, ...]] = {"googlenet": ("aux1.", "aux2."),
                                         "inception_v3": ("AuxLogits.",)}
_OTHER_TASKS = {"detection": "a detection model", "segmentation": "a segmentation model",
                "video": "a video model", "optical_flow": "an optical-flow model",
                "quantization": "a quantized model (for inference only)"}
EXAMPLES = ("resnet18", "resnet50", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny",
            "vit_b_16")


@functools.cache
def classifiers() -> tuple[str, ...]:
    """Every image-classification architecture of the installed torchvision."""
    import torchvision.models

    return tuple(torchvision.models.list_models(module=torchvision.models))


def check_arch(arch: str) -> str:
    """``arch`` if it names a torchvision classifier.

    Raises:
        ConfigError: another kind of torchvision model, or an unknown name (the message
            lists a few valid names, and close matches).
    """
    if arch in classifiers():
        return arch
    examples = f"e.g. {', '.join(EXAMPLES)} (any of torchvision.models.list_models())"
    task = _other_task(arch)
    if task is not None:
        raise ConfigError(f"{PREFIX}{arch} is {task}; ComputeShare trains image classifiers: "
                          f"{examples}")
    close = difflib.get_close_matches(arch, classifiers(), n=3)
    hint = f"did you mean {', '.join(PREFIX + c for c in close)}? " if close else ""
    raise ConfigError(f"unknown torchvision architecture {arch!r}; {hint}{examples}")


def _other_task(arch: str) -> str | None:
    import torchvision.models

    for module, task in _OTHER_TASKS.items():
        if arch in torchvision.models.list_models(module=getattr(torchvision.models, module)):
            return task
    return None


def build_torchvision(arch: str, info: DatasetInfo) -> nn.Module:
    """A fresh ``arch`` for ``info``'s channels and classes (RNG and device: the caller's).

    Raises:
        ConfigError: a table dataset, or images with neither 1 nor 3 channels.
    """
    import torchvision.models

    refuse_table(f"{PREFIX}{arch}", info)
    if info.channels not in (1, RGB):
        raise ConfigError(f"{PREFIX}{arch} takes 1- or 3-channel images; {info.name} has "
                          f"{info.channels} channels")
    model: nn.Module = torchvision.models.get_model(
        arch, weights=None, num_classes=info.num_classes, **_BUILD_KWARGS.get(arch, {}))
    if info.channels == 1:
        _to_one_channel(model)
    return model


def _stem(model: nn.Module) -> tuple[str, nn.Conv2d]:
    """The first ``Conv2d`` that reads RGB: the stem of every torchvision classifier."""
    for name, module in model.named_modules():
        if isinstance(module, nn.Conv2d) and module.in_channels == RGB:
            return name, module
    raise ConfigError(f"no 3-channel Conv2d to adapt to 1-channel images in "
                      f"{type(model).__name__}")


def fold_to_gray(weight: torch.Tensor) -> torch.Tensor:
    """A conv kernel over RGB as one over a single channel: the sum of the three (a gray
    image whose channels are equal then gives the same response)."""
    return weight.sum(dim=1, keepdim=True)


def _to_one_channel(model: nn.Module) -> None:
    name, conv = _stem(model)
    gray = nn.Conv2d(1, conv.out_channels, conv.kernel_size, conv.stride,  # type: ignore[arg-type]
                     conv.padding, conv.dilation, conv.groups,  # type: ignore[arg-type]
                     conv.bias is not None, conv.padding_mode)
    with torch.no_grad():
        gray.weight.copy_(fold_to_gray(conv.weight))
        if conv.bias is not None and gray.bias is not None:
            gray.bias.copy_(conv.bias)
    model.set_submodule(name, gray)


def check_image_size(arch: str, model: nn.Module, info: DatasetInfo) -> None:
    """One sample batch through ``model``; if it fails and a larger square size works,
    say which and suggest ``--image-size``.

    Raises:
        ConfigError: the model does not take ``info``'s images (or its output is wrong).
    """
    try:
        check_model_outputs(model, info)
    except ConfigError as error:
        size = _working_size(model, info)
        if size is None:
            raise
        cause = error.__cause__
        reason = first_lines(cause, lines=1) if cause is not None else str(error)
        raise ConfigError(
            f"{PREFIX}{arch} does not take {info.height}×{info.width} images ({reason}); "
            f"it works on {size}×{size}: add --image-size {size}") from error


def _working_size(model: nn.Module, info: DatasetInfo) -> int | None:
    for size in SIZES_TRIED:
        if size > min(info.height, info.width):
            try:
                check_model_outputs(model, dataclasses.replace(info, height=size, width=size))
            except ConfigError:
                continue
            return size
    return None


def adapt_state_dict(arch: str, state: Mapping[str, torch.Tensor],
                     model: nn.Module) -> tuple[dict[str, torch.Tensor], list[str]]:
    """ImageNet weights (or any for ``arch``) made to fit a model this module built.

    Auxiliary heads are dropped; a 3-channel stem kernel is folded for a 1-channel stem;
    a tensor that differs from the model's in its first dimension only is the head, sized
    to other classes: it keeps the model's fresh initialisation. Returns the adapted state
    and the keys left to the model (to log); other differences stay for the caller.
    """
    target = model.state_dict()
    dropped = AUXILIARY.get(arch, ())
    adapted: dict[str, torch.Tensor] = {}
    fresh: list[str] = []
    for key, tensor in state.items():
        if key.startswith(dropped):
            continue
        mine = target.get(key)
        if mine is not None and mine.shape != tensor.shape:
            if _is_gray_stem(tensor, mine):
                tensor = fold_to_gray(tensor)
            elif tensor.dim() and tensor.shape[1:] == mine.shape[1:]:
                fresh.append(key)
                tensor = mine
        adapted[key] = tensor
    return adapted, fresh


def _is_gray_stem(tensor: torch.Tensor, mine: torch.Tensor) -> bool:
    return (tensor.dim() == 4 and tensor.shape[1] == RGB and mine.shape[1] == 1
            and tensor.shape[0] == mine.shape[0] and tensor.shape[2:] == mine.shape[2:])


def weights_entry(arch: str, name: str) -> Any:
    """torchvision's weights enum member for ``arch`` named ``name`` (``DEFAULT``,
    ``IMAGENET1K_V1``, or ``ResNet18_Weights.IMAGENET1K_V1``).

    Raises:
        ConfigError: no such weights for ``arch`` (the message lists those it has).
    """
    import torchvision.models

    weights = torchvision.models.get_model_weights(arch)
    prefix, _, member = name.rpartition(".")
    if prefix in ("", weights.__name__) and member in weights.__members__:
        return weights[member]
    raise ConfigError(f"{PREFIX}{arch} has no weights {name!r}; it has "
                      f"{', '.join(weights.__members__)}")
