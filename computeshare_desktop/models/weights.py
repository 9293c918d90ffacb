"""Starting weights (``--weights``): a state_dict file the user chose, or torchvision's
pretrained weights by name.

Files are the user's own, on the hub: ``.pth``/``.pt`` are read with
``torch.load(weights_only=True)`` (FACTS: never bytes from the network), ``.safetensors``
with the safetensors package. Weights must fit the model exactly, key for key and shape for
shape; the error names the first keys that do not. For a torchvision model, ImageNet
weights fit after ``vision.adapt_state_dict`` (the head sized to the dataset's classes starts
fresh, a 1-channel stem gets the RGB kernels summed).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models import hubcache, vision
from computeshare_desktop.models.checks import first_lines, shape_text
from computeshare_desktop.models.specs import ModelSpec, SpecKind

logger = logging.getLogger(__name__)

TORCH_SUFFIXES = (".pth", ".pt")
SAFETENSORS_SUFFIX = ".safetensors"
SHOWN_KEYS = 5  # of each kind of mismatch, in the error
# Checkpoints from before BatchNorm counted its batches lack this buffer; BatchNorm itself
# accepts that (the count then starts at zero), so do we.
_OPTIONAL_SUFFIX = ".num_batches_tracked"


def load_starting_weights(model: nn.Module, source: str, spec: ModelSpec, *,
                          progress: hubcache.Progress | None = None,
                          download: bool = True) -> None:
    """Load ``source`` into ``model`` (built from ``spec``): a ``.pth``/``.pt`` or
    ``.safetensors`` state_dict, or for a torchvision spec a weights name (``DEFAULT``,
    ``IMAGENET1K_V1``) read from the torch hub cache, downloaded first when missing if
    ``download`` (reporting to ``progress``).

    Raises:
        ConfigError: no such file or weights name; a file that is not a state_dict; a
            name not cached and not downloadable (the message says where to put it); keys
            or shapes that do not fit (the first of each named).
    """
    state, origin = _read(source.strip(), spec, progress, download)
    if spec.kind is SpecKind.TORCHVISION:
        state, fresh = vision.adapt_state_dict(spec.name, state, model)
        if fresh:
            logger.info("%s: %s keep their fresh initialisation (sized to the dataset's "
                        "classes)", origin, ", ".join(fresh))
    _check_fit(state, model, origin, spec)
    model.load_state_dict(state, strict=False)  # strict but for _OPTIONAL_SUFFIX, checked
    logger.info("loaded starting weights from %s", origin)


def _read(source: str, spec: ModelSpec, progress: hubcache.Progress | None,
          download: bool) -> tuple[Mapping[str, torch.Tensor], str]:
    path = Path(source).expanduser()
    suffix = path.suffix.lower()
    if suffix in TORCH_SUFFIXES:
        return _read_torch(path), str(path)
    if suffix == SAFETENSORS_SUFFIX:
        return _read_safetensors(path), str(path)
    looks_like_a_path = any(sep in source for sep in "/\\") or path.is_file()
    if spec.kind is SpecKind.TORCHVISION and not looks_like_a_path:
        weights = hubcache.weights_file(spec.name, source)
        cached = hubcache.ensure_weights(weights, progress=progress, download=download)
        return _read_torch(cached), weights.label
    names = " or a torchvision weights name (DEFAULT, IMAGENET1K_V1 ...)" \
        if spec.kind is SpecKind.TORCHVISION else ""
    raise ConfigError(f"--weights {source}: give a {', '.join(TORCH_SUFFIXES)} or "
                      f"{SAFETENSORS_SUFFIX} state_dict file{names}")


def _read_torch(path: Path) -> Mapping[str, torch.Tensor]:
    _exists(path)
    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ConfigError(f"{path} cannot be read as weights (torch.load, weights only):\n"
                          f"{first_lines(exc, lines=1)}") from exc
    return _state_dict(loaded, path)


def _read_safetensors(path: Path) -> Mapping[str, torch.Tensor]:
    _exists(path)
    try:
        from safetensors.torch import load_file
    except ImportError as exc:
        raise ConfigError(f"reading {path} needs the safetensors package "
                          f"(pip install safetensors)") from exc
    try:
        loaded = load_file(str(path), device="cpu")
    except Exception as exc:
        raise ConfigError(f"{path} is not a safetensors file:\n"
                          f"{first_lines(exc, lines=1)}") from exc
    return _state_dict(loaded, path)


def _exists(path: Path) -> None:
    if not path.is_file():
        raise ConfigError(f"weights file {path} does not exist")


def _state_dict(loaded: object, path: Path) -> Mapping[str, torch.Tensor]:
    if isinstance(loaded, Mapping) and all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in loaded.items()):
        return loaded
    if isinstance(loaded, Mapping):
        keys = [k for k, v in loaded.items() if not isinstance(v, torch.Tensor)]
        held = f"a dict whose {_listed([str(k) for k in keys])} are not tensors"
    else:
        held = f"a {type(loaded).__name__}"
    raise ConfigError(f"{path} holds {held}, not a state_dict: save "
                      f"torch.save(model.state_dict(), PATH)")


def _check_fit(state: Mapping[str, torch.Tensor], model: nn.Module, origin: str,
               spec: ModelSpec) -> None:
    wrong = misfit(state, model)
    if wrong:
        raise ConfigError(f"the weights in {origin} do not fit {spec.label}: {wrong}")


def misfit(state: Mapping[str, torch.Tensor], model: nn.Module) -> str:
    """How ``state`` does not fit ``model``: its missing and unexpected keys and wrong
    shapes (the first of each named); empty when it fits."""
    target = model.state_dict()
    missing = [k for k in target if k not in state and not k.endswith(_OPTIONAL_SUFFIX)]
    unexpected = [k for k in state if k not in target]
    wrong = [f"{k} {shape_text(state[k].shape)} in the file, "
             f"{shape_text(target[k].shape)} in the model"
             for k in state if k in target and state[k].shape != target[k].shape]
    parts = [f"{what} ({len(keys)}): {_listed(keys)}" for what, keys in
             (("missing keys", missing), ("unexpected keys", unexpected),
              ("wrong shapes", wrong)) if keys]
    return f"{'; '.join(parts)}{_prefix_hint(unexpected, target)}" if parts else ""


def _listed(keys: list[str]) -> str:
    more = len(keys) - SHOWN_KEYS
    return ", ".join(keys[:SHOWN_KEYS]) + (f" and {more} more" if more > 0 else "")


def _prefix_hint(unexpected: list[str], target: Mapping[str, torch.Tensor]) -> str:
    """A file saved from a wrapper (DataParallel's ``module.``, a trainer's ``model.``)
    has every key under one extra prefix: say which."""
    heads = {k.split(".", 1)[0] for k in unexpected}
    if len(heads) == 1 and all("." in k and k.split(".", 1)[1] in target for k in unexpected):
        return f" (the file's keys carry an extra {heads.pop()!r}. prefix: strip it)"
    return ""
