"""What both sides of a shipped graph share: the refusal, the caps, the torch release, the
fingerprint.

A graph is the JSON of ``torch.export``'s serializer (its model schema, no weights, no
constants, no example inputs) plus raw tensors. The hub makes it (``export.py``); a worker
checks it (``checks.py``) before anything of it reaches torch or sympy, then rebuilds it
(``loader.py``). Nothing here imports torch at call time except ``torch_release``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch

from computeshare_desktop.errors import ComputeShareError, ExitCode
from computeshare_desktop.models.flat import FINGERPRINT_HEX_CHARS
from computeshare_desktop.protocol.graphs import MAX_PROGRAM_BYTES as MAX_PROGRAM_BYTES

# Caps that keep a hostile graph from exhausting memory before it is even checked. A
# torchvision ResNet-50 in train mode, decomposed and stripped of metadata, is ~0.4 MB and
# ~450 nodes; ViT-B/16 ~1,100 nodes. These leave a wide margin. The program's own cap,
# MAX_PROGRAM_BYTES, is the manifest's (protocol.graphs): one limit, checked before the
# download and again here.
MAX_NODES = 20_000
MAX_TENSORS = 50_000  # entries in the graph's tensor_values
MAX_STATE_TENSORS = 10_000  # parameters, buffers and constants
MAX_NAME_CHARS = 200
MAX_EXPR_CHARS = 2_000
MAX_DIMS = 16
MAX_LIST_ITEMS = 4_096  # an int list, a tensor list (torch.cat's inputs)
MAX_STATIC_NUMEL = 2**31  # any tensor the graph declares with a fixed shape
MAX_INT = 2**62  # any int in the graph (slice ends are 2**63 - 1: see checks.SLICE_END)
# Shape expressions (symbols.py): a real export has a few dozen distinct ones (a GRU over
# 28 steps: 85) and no Max, Min or FloorDiv, each of which costs sympy ~10 ms.
MAX_EXPRESSIONS = 1_024  # distinct expressions in one graph
MAX_GRAPH_OPERATORS = 1_024  # Add, Mul, Max, Min and FloorDiv in them, all together (that GRU: 138)
MAX_BRANCHING = 32  # Max, Min and FloorDiv in them, all together
MIN_BATCH = 2  # the batch's least size (the hub exports so: a batch of 1 would be fixed)


class GraphRefused(ComputeShareError):
    """A worker refuses a graph (or a hub its own export); ``reason`` is one line for the
    hub and the person, naming what was refused. Nothing of the graph ran."""

    exit_code = ExitCode.REFUSED

    def __init__(self, reason: str, where: str | None = None) -> None:
        """``where``: the graph's node or tensor the refusal is about, when there is one
        (the hub names its layer: ``export.explain``)."""
        self.reason = reason
        self.where = where
        super().__init__(f"model graph refused: {reason}")


# A torch version as torch writes it (PEP 440): a release, then at most a pre-release
# (``2.6.0a0``, ``2.5.0rc1``), a post or dev part (``2.6.0.dev20241001``) and a local tag
# (``+cu130``, ``+cpu``, ``+git1a2b3c4``, NVIDIA's ``+e000cf0.nv24.10``), and nothing else.
_RELEASE = re.compile(r"\A(\d{1,4})\.(\d{1,4})\.(\d{1,4})(?:(?:a|b|rc)\d{1,8})?"
                      r"(?:\.post\d{1,8})?(?:\.dev\d{1,10})?"
                      r"(?:\+[A-Za-z0-9]{1,40}(?:\.[A-Za-z0-9]{1,40}){0,8})?\Z")
MAX_VERSION_CHARS = 64


def release(version: str) -> str:
    """``major.minor.patch`` of a torch version string: local tags (``+cu130``, ``+cpu``)
    and pre-release suffixes are dropped. ``GraphRefused`` when it is not a whole version
    (``2.14.1abc`` is not)."""
    match = _RELEASE.match(version) if len(version) <= MAX_VERSION_CHARS else None
    if match is None:
        raise GraphRefused(f"unreadable torch version {version[:MAX_VERSION_CHARS]!r}")
    return ".".join(str(int(part)) for part in match.groups())


def torch_release() -> str:
    """This process's torch release (``2.14.1`` for ``2.14.1+cu130``)."""
    return release(torch.__version__)


def require_release(hub_torch: str, graph_torch: str | None = None) -> None:
    """Refuse unless the hub's torch (and the graph's own record of it) is ours: the
    export format is not stable across releases.

    Raises:
        GraphRefused: naming both releases.
    """
    ours = torch_release()
    theirs = release(hub_torch)
    if theirs != ours:
        raise GraphRefused(f"the hub runs torch {theirs} and this worker torch {ours}: "
                           f"the graph format differs between releases; install torch {theirs}")
    if graph_torch is not None and release(graph_torch) != theirs:
        raise GraphRefused(f"the graph was made by torch {release(graph_torch)} but the hub "
                           f"says it runs torch {theirs}")


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A tensor's name, shape and dtype: what the fingerprint covers."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # str(torch.dtype), e.g. "torch.float32"

    @classmethod
    def of(cls, name: str, tensor: torch.Tensor) -> TensorSpec:
        return cls(name, tuple(tensor.shape), str(tensor.dtype))


def graph_fingerprint(program: bytes, trainable: Iterable[TensorSpec],
                      state: Iterable[TensorSpec], aliases: Mapping[str, str]) -> str:
    """16 hex chars of sha256 over the graph's JSON, then the trainable tensors in flat
    order, every other tensor by name and the tied names: the same on the hub and on
    each worker."""
    digest = hashlib.sha256(program)
    digest.update(b"\0trainable\n")
    for spec in trainable:
        digest.update(f"{spec.name}|{spec.shape}|{spec.dtype}\n".encode())
    digest.update(b"\0state\n")
    for spec in sorted(state, key=lambda s: s.name):
        digest.update(f"{spec.name}|{spec.shape}|{spec.dtype}\n".encode())
    digest.update(b"\0aliases\n")
    for alias in sorted(aliases):
        digest.update(f"{alias}={aliases[alias]}\n".encode())
    return digest.hexdigest()[:FINGERPRINT_HEX_CHARS]
