"""The worker's side: a checked graph and raw tensors become a module that trains.

``load_training_graph`` runs every check of ``checks.py`` first, and bounds what it will
allocate (the trainable parameters, by what the hub will send); only a graph that passes
reaches torch, and then only as the Structs that were validated (converted, never the
peer's bytes), through torch's graph deserializer with in-memory tensors and no example
inputs (``rebuild.py``). The rebuilt graph then runs on meta tensors with the worker's
rules (``shapes.py``) before ``.module(check_guards=False)`` makes the module that trains,
whose guarded ops check those rules again at each call. Neither ``torch.load``,
``torch.export.load`` nor pickle is called on this path.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from computeshare_desktop.codec.base import MAX_NUMEL
from computeshare_desktop.graph import rebuild, shapes
from computeshare_desktop.graph.base import GraphRefused, TensorSpec, graph_fingerprint
from computeshare_desktop.graph.checks import CheckedProgram, Meta, check_program
from computeshare_desktop.models import flat

# schema.ScalarType numbers -> dtypes (the ones schema.py accepts)
DTYPES = {1: torch.uint8, 2: torch.int8, 3: torch.int16, 4: torch.int32, 5: torch.int64,
          6: torch.float16, 7: torch.float32, 8: torch.float64, 12: torch.bool,
          13: torch.bfloat16}
# torch's deserializer keeps process-wide state while it runs (_CURRENT_DESERIALIZER): two
# workers of one process (tests, a host's own worker) rebuild one graph at a time.
_REBUILDING = threading.Lock()
log = logging.getLogger(__name__)
# torch's deserializer warns of things that are no fault of the person's ("Symbol s83 did
# not appear in the graph that was deserialized"): the debug log's, as the hub's export's
SERDE_LOGGER = "torch._export.serde.serialize"


@contextmanager
def _torch_notes_to_debug() -> Iterator[None]:
    """While rebuilding: what torch's deserializer logs goes to our debug log instead."""
    def to_debug(record: logging.LogRecord) -> bool:
        log.debug("torch, rebuilding the graph: %s", record.getMessage())
        return False

    source = logging.getLogger(SERDE_LOGGER)
    source.addFilter(to_debug)
    try:
        yield
    finally:
        source.removeFilter(to_debug)


@dataclass(slots=True)
class GraphModel:
    """A rebuilt training program and its trainable parameters in the hub's flat order."""

    module: nn.Module  # module(x) -> logits; train-mode behaviour is fixed in the graph
    parameters: list[nn.Parameter]  # the ``trainable`` FQNs, in that order
    op_count: int
    fingerprint: str

    def load_flat(self, vector: torch.Tensor) -> None:
        """Copy the hub's flat vector into the trainable parameters."""
        if vector.dim() != 1 or vector.numel() != sum(p.numel() for p in self.parameters):
            raise ValueError(f"flat vector has shape {tuple(vector.shape)}")
        with torch.no_grad():
            for p, chunk in zip(self.parameters, flat.split(vector, self.parameters),
                                strict=True):
                p.copy_(chunk)

    def summary(self) -> str:
        count = sum(p.numel() for p in self.parameters)
        return f"{count:,} trainable parameters, {self.op_count} ops, graph checked"


def load_training_graph(program: bytes, trainable: Sequence[str],
                        state: Mapping[str, torch.Tensor], *, hub_torch: str,
                        aliases: Mapping[str, str] | None = None,
                        device: str | torch.device = "cpu",
                        trainable_numel: int | None = None) -> GraphModel:
    """Check and rebuild a hub's training graph.

    Args:
        program: the graph's JSON, as ``TrainingGraph.program``.
        trainable: FQNs of the trainable parameters in flat-vector order; they start as
            zeros (the hub's first model frame fills them: ``GraphModel.load_flat``).
        state: every other tensor the graph names (frozen parameters, buffers, constants),
            plain CPU tensors (copied: the module never aliases them).
        hub_torch: the torch version the hub reported.
        aliases: tied tensors, a second name -> the name in ``trainable`` or ``state``.
        device: where the module runs (the graph's device arguments follow it).
        trainable_numel: the values the hub's flat vector will hold (its manifest's), which
            the trainable parameters must add up to; any number is capped by the most a
            model frame carries (``codec.MAX_NUMEL``).

    Raises:
        GraphRefused: the graph or the tensors were refused, or torch could not rebuild
            a graph that passed the checks; nothing of the graph ran.
    """
    aliases = dict(aliases or {})
    checked = check_program(program, hub_torch=hub_torch)
    _check_state(checked, trainable, state, aliases)
    _check_trainable_size(checked, trainable, trainable_numel)
    tensors: dict[str, torch.Tensor] = {
        name: nn.Parameter(_value(name, meta, state), requires_grad=name in trainable)
        for name, meta in checked.parameters.items() if name not in aliases}
    tensors.update({n: state[n].clone() for n in checked.buffers if n not in aliases})
    for alias, name in aliases.items():  # the same object under both names
        tensors[alias] = tensors[name]
    state_dict = {n: tensors[n] for n in (*checked.parameters, *checked.persistent)}
    constants = {**{n: tensors[n] for n in checked.buffers if n not in checked.persistent},
                 **{n: state[n].clone() for n in checked.constants}}
    module = _rebuild(checked, state_dict, constants, device)
    for alias, name in aliases.items():  # moving to a device unties them: tie again
        _tie(module, alias, name)
    ordered = [module.get_parameter(name) for name in trainable]
    chosen = set(map(id, ordered))
    for p in module.parameters():
        p.requires_grad_(id(p) in chosen)
    specs = [TensorSpec(n, checked.parameters[n].shape, str(DTYPES[checked.parameters[n].dtype]))
             for n in trainable]
    return GraphModel(module, ordered, checked.op_count,
                      graph_fingerprint(bytes(program), specs,
                                        [TensorSpec.of(n, t) for n, t in state.items()],
                                        aliases))


def _check_state(checked: CheckedProgram, trainable: Sequence[str],
                 state: Mapping[str, torch.Tensor], aliases: Mapping[str, str]) -> None:
    if len(set(trainable)) != len(trainable) or not set(trainable) <= checked.parameters.keys():
        raise GraphRefused("the trainable parameters do not match the graph's")
    metas = {**checked.parameters, **checked.buffers, **checked.constants}
    for alias, name in aliases.items():
        kinds = [alias in checked.parameters, name in checked.parameters]
        if alias not in metas or name not in metas or name in aliases or kinds[0] != kinds[1] \
                or alias in trainable or metas[alias] != metas[name]:
            raise GraphRefused(f"the tied names {alias!r} -> {name!r} do not fit the graph")
    needed = set(metas) - set(trainable) - set(aliases)
    if set(state) != needed:
        extra, missing = sorted(set(state) - needed), sorted(needed - set(state))
        raise GraphRefused(f"tensors do not match the graph: missing {missing[:5]}, "
                           f"unexpected {extra[:5]}")
    for name, tensor in state.items():
        _check_tensor(name, tensor, metas[name])


def _check_trainable_size(checked: CheckedProgram, trainable: Sequence[str],
                          declared: int | None) -> None:
    """The trainable parameters start as zeros made here, at the size the graph declares:
    before any is made, their total must be what the hub will send (every other tensor
    arrived already, at its declared size: ``_check_state``)."""
    numel = sum(math.prod(checked.parameters[name].shape) for name in trainable)
    if numel > MAX_NUMEL or (declared is not None and numel != declared):
        limit = f"the hub sends {declared:,}" if declared is not None else \
            f"a model frame carries at most {MAX_NUMEL:,}"
        raise GraphRefused(f"the graph declares {numel:,} trainable values; {limit}")


def _check_tensor(name: str, tensor: object, meta: Meta) -> None:
    if type(tensor) not in (torch.Tensor, nn.Parameter):
        raise GraphRefused(f"tensor {name!r} is a {type(tensor).__name__}, not a plain tensor")
    assert isinstance(tensor, torch.Tensor)
    if tensor.layout != torch.strided or tensor.device.type != "cpu" or tensor.is_quantized:
        raise GraphRefused(f"tensor {name!r} is not a dense CPU tensor")
    if tuple(tensor.shape) != meta.shape or tensor.dtype != DTYPES[meta.dtype]:
        raise GraphRefused(f"tensor {name!r} is {tuple(tensor.shape)} {tensor.dtype}, the "
                           f"graph wants {meta.shape} {DTYPES[meta.dtype]}")


def _tie(module: nn.Module, alias: str, name: str) -> None:
    owner_path, _, attribute = alias.rpartition(".")
    owner = module.get_submodule(owner_path)
    source_path, _, source_attribute = name.rpartition(".")
    tensor = getattr(module.get_submodule(source_path), source_attribute)
    if isinstance(tensor, nn.Parameter):
        owner.register_parameter(attribute, tensor)
    else:
        owner._buffers[attribute] = tensor  # keeps whether it is persistent


def _value(name: str, meta: Meta, state: Mapping[str, torch.Tensor]) -> torch.Tensor:
    if name in state:
        return state[name].detach().clone()
    return torch.zeros(meta.shape, dtype=DTYPES[meta.dtype])


def _rebuild(checked: CheckedProgram, state_dict: dict[str, torch.Tensor],
             constants: dict[str, torch.Tensor], device: str | torch.device) -> nn.Module:
    try:
        # the validated Structs, converted: nothing the checks did not read goes further
        serialized = rebuild.torch_schema_program(checked.program)
        with _REBUILDING, _torch_notes_to_debug():
            program = rebuild.deserialize(serialized, state_dict, constants)
        shapes.check_shapes(program)  # before any op runs for real
        if torch.device(device).type != "cpu":
            from torch.export.passes import move_to_device_pass

            program = move_to_device_pass(program, torch.device(device))
        module = program.module(check_guards=False)
        shapes.install_guards(module)  # the rules again, at every call
        return module
    except GraphRefused:
        raise
    except Exception as err:  # torch raises many kinds; the hub gets one line
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise GraphRefused(f"torch could not rebuild the checked graph: "
                           f"{type(err).__name__}: {first}") from err
