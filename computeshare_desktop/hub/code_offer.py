"""The opt-in fallback for a ``PATH.py:NAME`` model that cannot be exported: its source.

With ``--offer-code`` the hub offers workers the model's Python file instead of a graph
(Welcome ``compute="code"``), through the same parts as a graph (protocol/graphs.py): the
manifest (with ``code``: the file's name, the definition, the keyword arguments the hub
built it with), the ``program`` part, which is the source itself, and the ``state`` part,
the frozen parameters and the buffers as raw tensors. A worker runs that source only once
its person has approved its exact sha256 for this hub's key (worker/code.py); nothing
else of the hub's travels as code.

The fingerprint covers what runs: the source's sha256, the model's tensors (names,
shapes, dtypes) and which of them train, so a worker that builds anything else refuses.
"""

from __future__ import annotations

import re

import torch
from torch import nn

from ..data import DatasetInfo
from ..errors import ConfigError
from ..models import ModelSpec, fingerprint
from ..models.checks import builder_arguments
from ..protocol.graphs import (CodeSpec, Manifest, code_fingerprint, encode_manifest, entry,
                               program_sha256, state_blob)

HINT = ("as a last resort, --offer-code offers workers the file itself: each runs it only "
        "once its person approves that file's sha256 for this hub")


def refusal(error: ConfigError, spec: ModelSpec) -> ConfigError:
    """The export's refusal, with the fallback named (for a file model only)."""
    if spec.path is None or spec.path.suffix != ".py":
        return error
    return ConfigError(f"{error}\n{HINT}")


def code_parts(model: nn.Module, spec: ModelSpec, info: DatasetInfo
               ) -> tuple[Manifest, dict[str, bytes]]:
    """The manifest and the parts (``manifest``, ``program``: the source, ``state``) of
    ``model``, built from ``spec``'s file, offered as code.

    Raises:
        ConfigError: the file cannot be read again, or a tensor cannot travel.
    """
    assert spec.path is not None
    try:
        source = spec.path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {spec.path} to offer it: {exc}") from None
    code = CodeSpec(file=file_name(spec.path.name), name=spec.name,
                    kwargs=_kwargs(builder_arguments(info)))
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    tensors = {n: p.detach() for n, p in model.named_parameters() if not p.requires_grad}
    tensors.update((n, b.detach()) for n, b in model.named_buffers())
    try:
        state = [entry(name, tensor) for name, tensor in tensors.items()]
    except ValueError as exc:
        raise ConfigError(f"the model cannot be offered as code: {exc}") from None
    blob = state_blob(state, tensors)
    sha = program_sha256(source)
    stats = [n for n, b in model.named_buffers() if b.dtype == torch.float32]
    manifest = Manifest(
        model=spec.label[:200], trainable=trainable, aliases={}, state=state, stats=stats,
        program_bytes=len(source), program_sha256=sha, state_bytes=len(blob), op_count=0,
        fingerprint=code_fingerprint(sha, fingerprint(model), trainable), code=code,
        trainable_numel=sum(p.numel() for p in model.parameters() if p.requires_grad))
    return manifest, {"manifest": encode_manifest(manifest), "program": source,
                      "state": blob}


def file_name(name: str) -> str:
    """The file's name as the manifest may carry it (the worker writes it under this)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name.removesuffix(".py"))[:90].lstrip(".-")
    return f"{stem or 'model'}.py"


def _kwargs(offered: dict[str, object]) -> dict[str, int | list[int]]:
    """The builder's arguments as the manifest carries them (sizes: ints, or a pair)."""
    out: dict[str, int | list[int]] = {}
    for key, value in offered.items():
        if isinstance(value, tuple):
            out[key] = [int(v) for v in value]
        elif isinstance(value, int):
            out[key] = value
    return out
