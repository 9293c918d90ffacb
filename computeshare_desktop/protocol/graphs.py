"""A graph's manifest and its state tensors on the wire. Pure: bytes in, values out, or
RemoteProtocolError.

A hub that ships its model as a graph serves three parts, each fetched by byte ranges
(GRAPH_GET -> GRAPH_DATA) after the Welcome:

- ``manifest``: this module's ``Manifest`` as JSON, decoded strictly (msgspec: no unknown
  fields, every name, list and number bounded) and capped at ``MAX_MANIFEST_BYTES``;
- ``program``: the graph's JSON (torch.export's model schema), which the worker checks
  itself (``graph.load_training_graph``) after its size and sha256 match the manifest;
- ``state``: the tensors of the manifest's ``state`` entries, one after another, each as
  raw little-endian bytes (``tensors.py``) of exactly the entry's dtype and shape.

The manifest also names the running statistics (``stats``): float32 buffers the graph
updates in training, which travel with every MODEL (the hub's) and every PUSH (their
change over the work), raw, in that order.

A model offered as code (Welcome ``compute="code"``, the hub's ``--offer-code``) travels
the same way: the ``program`` part is then the model's Python source, whose sha256 is the
one a person approves, and the manifest's ``code`` says which file, which definition and
the keyword arguments the hub built it with. Nothing here runs it (worker/code.py does,
once approved).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Literal, get_args

import msgspec
import torch

from ..errors import RemoteProtocolError
from .codes import RejectCode
from .messages import Int, Str
from .paths import TensorPath, path_problem
from .tensors import DTYPES, MAX_DIMS, frame_to_tensor, tensor_to_frame

MAX_MANIFEST_BYTES = 8 * 2**20  # ~100 bytes an entry: tens of thousands of tensors
# One limit for the program, here and in the graph's checks (graph.base): a manifest
# declaring more is refused before the download starts.
MAX_PROGRAM_BYTES = 16 * 2**20
MAX_STATE_BYTES = 2**34  # frozen weights of the largest models people fine-tune here
MAX_TENSORS = 50_000
MAX_NAME_CHARS = 200
MAX_TRAINABLE_NUMEL = 2**28  # the most values a model frame carries (codec.base.MAX_NUMEL)

Name = TensorPath  # a tensor's path in the module (``0.weight``): paths.py's one rule
DType = Literal["uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
                "float64", "bool"]
Shape = Annotated[list[Annotated[int, msgspec.Meta(ge=0, le=2**31)]],
                  msgspec.Meta(max_length=MAX_DIMS)]
Names = Annotated[list[Name], msgspec.Meta(max_length=MAX_TENSORS)]
Sha256 = Annotated[str, msgspec.Meta(pattern=r"\A[0-9a-f]{64}\Z")]

assert set(get_args(DType)) == set(DTYPES), "the manifest's dtypes are the frames' dtypes"


class TensorEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One state tensor: its name in the graph, its dtype and its shape."""

    name: Name
    dtype: DType
    shape: Shape

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPES[self.dtype].itemsize


Identifier = Annotated[str, msgspec.Meta(max_length=MAX_NAME_CHARS,
                                         pattern=r"\A[A-Za-z_][A-Za-z0-9_]*\Z")]
FileName = Annotated[str, msgspec.Meta(max_length=100,
                                       pattern=r"\A[A-Za-z0-9_][A-Za-z0-9_.-]*\.py\Z")]
Argument = Annotated[int, msgspec.Meta(ge=0, le=2**31)]
MAX_ARGUMENTS = 16


class CodeSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A model offered as code: ``NAME`` in the file ``file`` (the ``program`` part),
    called with ``kwargs`` (sizes only: ``image_size`` may be a pair)."""

    file: FileName  # the file's own name ("net.py"); never a path
    name: Identifier
    kwargs: Annotated[dict[Identifier, Argument | Annotated[list[Argument],
                                                            msgspec.Meta(max_length=2)]],
                      msgspec.Meta(max_length=MAX_ARGUMENTS)]

    @property
    def label(self) -> str:
        return f"{self.file}:{self.name}"


class Manifest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a worker needs to know about a graph before it fetches it."""

    model: Str  # the model's name for people ("net.py:Net", "torchvision:resnet18")
    trainable: Names  # FQNs of the trainable parameters, in the flat vector's order
    aliases: Annotated[dict[Name, Name], msgspec.Meta(max_length=MAX_TENSORS)]
    state: Annotated[list[TensorEntry], msgspec.Meta(max_length=MAX_TENSORS)]
    stats: Names  # float32 state buffers that travel with each model and push
    program_bytes: Annotated[int, msgspec.Meta(ge=1, le=MAX_PROGRAM_BYTES)]
    program_sha256: Sha256
    state_bytes: Annotated[int, msgspec.Meta(ge=0, le=MAX_STATE_BYTES)]
    op_count: Int
    fingerprint: Str
    code: CodeSpec | None = None  # a model offered as code: ``program`` is its source
    # Values in the flat vector every MODEL frame carries (the trainable parameters'): a
    # worker allocates them only once the graph declares exactly so many (graph.contract).
    trainable_numel: Annotated[int, msgspec.Meta(ge=0, le=MAX_TRAINABLE_NUMEL)] = 0

    def stats_numel(self) -> int:
        """Values in a statistics frame (float32 each)."""
        shapes = {e.name: e.shape for e in self.state}
        return sum(math.prod(shapes[name]) for name in self.stats)


def encode_manifest(manifest: Manifest) -> bytes:
    """The manifest's JSON."""
    return msgspec.json.encode(manifest)


def decode_manifest(data: bytes | bytearray | memoryview) -> Manifest:
    """Decode and check a manifest.

    Raises:
        RemoteProtocolError: TOO_LARGE over the cap; MALFORMED when it is not a manifest
            or does not hold together (names twice, stats that are no float32 state
            tensor, sizes that do not add up).
    """
    if len(data) > MAX_MANIFEST_BYTES:
        raise RemoteProtocolError(RejectCode.TOO_LARGE, f"manifest of {len(data)} bytes")
    try:
        manifest = msgspec.json.decode(data, type=Manifest, strict=True)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        why = str(exc)[:160].encode("ascii", "backslashreplace").decode("ascii")
        raise RemoteProtocolError(RejectCode.MALFORMED, f"bad graph manifest: {why}") from None
    except RecursionError:  # nesting msgspec walks without a type to stop it
        raise RemoteProtocolError(RejectCode.MALFORMED,
                                  "bad graph manifest: it nests too deeply") from None
    _check(manifest)
    return manifest


def _check(m: Manifest) -> None:
    names = [e.name for e in m.state]
    for name in (*names, *m.trainable, *m.aliases, *m.aliases.values()):
        problem = path_problem(name)
        if problem is not None:
            raise RemoteProtocolError(RejectCode.MALFORMED, f"tensor name {name!r}: {problem}")
    state = {e.name: e for e in m.state}
    if len(set(names)) != len(names) or len(set(m.trainable)) != len(m.trainable) \
            or state.keys() & set(m.trainable):
        raise RemoteProtocolError(RejectCode.MALFORMED, "a tensor is named twice")
    if len(set(m.stats)) != len(m.stats) or any(
            n not in state or state[n].dtype != "float32" for n in m.stats):
        raise RemoteProtocolError(RejectCode.MALFORMED,
                                  "the statistics must be float32 state tensors")
    if sum(e.nbytes for e in m.state) != m.state_bytes:
        raise RemoteProtocolError(RejectCode.MALFORMED, "the state's size does not add up")


def program_sha256(program: bytes) -> str:
    return hashlib.sha256(program).hexdigest()


def code_fingerprint(source_sha256: str, tensors: str, trainable: Sequence[str]) -> str:
    """The fingerprint of a model offered as code: its source's sha256, its tensors'
    fingerprint (``models.fingerprint``) and which of them train."""
    text = "\n".join(["code", source_sha256, tensors, *trainable])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def state_blob(entries: Sequence[TensorEntry], tensors: Mapping[str, torch.Tensor]) -> bytes:
    """The ``state`` part: each entry's tensor as raw bytes, in order."""
    return b"".join(tensor_to_frame(tensors[e.name]) for e in entries)


def state_tensors(blob: bytes | bytearray | memoryview,
                  manifest: Manifest) -> dict[str, torch.Tensor]:
    """The ``state`` part back as tensors, each checked against its entry: views of a
    writable ``blob`` where they can be (so a state is held once while it is decoded; write
    to them only if the blob is yours), copies of a read-only one.

    Raises:
        RemoteProtocolError: BAD_SHAPE when the sizes disagree.
    """
    if len(blob) != manifest.state_bytes:
        raise RemoteProtocolError(RejectCode.BAD_SHAPE,
                                  f"state of {len(blob)} bytes, manifest says "
                                  f"{manifest.state_bytes}")
    view, offset, out = memoryview(blob), 0, {}
    for entry in manifest.state:
        size = entry.nbytes
        out[entry.name] = frame_to_tensor(view[offset:offset + size], entry.dtype, entry.shape,
                                          size, share=True)
        offset += size
    return out


def entry(name: str, tensor: torch.Tensor) -> TensorEntry:
    """The entry of a state tensor the hub ships."""
    dtype = next((n for n, d in DTYPES.items() if d == tensor.dtype), None)
    if dtype is None or tensor.dim() > MAX_DIMS:
        raise ValueError(f"state tensor {name!r} of {tensor.dtype} and {tensor.dim()} "
                         "dimensions cannot travel")
    return TensorEntry(name, dtype, list(tensor.shape))  # type: ignore[arg-type]


def stats_frame(values: torch.Tensor | None) -> bytes:
    """A statistics frame: raw float32 (empty for a built-in)."""
    return b"" if values is None else tensor_to_frame(values.to(torch.float32).reshape(-1))


def stats_from_frame(frame: bytes | memoryview, numel: int) -> torch.Tensor | None:
    """A statistics frame of ``numel`` float32 values (None when the model has none).

    Raises:
        RemoteProtocolError: BAD_SHAPE when the frame has another size.
    """
    if numel == 0:
        if len(frame):
            raise RemoteProtocolError(RejectCode.BAD_SHAPE,
                                      "running statistics for a model that has none")
        return None
    return frame_to_tensor(frame, "float32", [numel], 4 * numel)
