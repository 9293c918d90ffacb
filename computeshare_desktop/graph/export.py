"""The hub's side: a user's module becomes a checked training graph and its tensors.

``export_training_graph`` exports in train mode with a dynamic batch (at least 2), lowers
the program to core ATen (``run_decompositions``: a closed opset the worker's allow-list can
name), serializes the graph alone (no weights, constants or example inputs), strips what is
only for people (stack traces, module paths), and runs the worker's own checks on the
result, so that a model a worker would refuse is refused here, before the session opens.
"""

from __future__ import annotations

import io
import json
import logging
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.graph import tracing
from computeshare_desktop.graph.base import (
    MIN_BATCH,
    GraphRefused,
    TensorSpec,
    graph_fingerprint,
    torch_release,
)
from computeshare_desktop.graph.checks import check_program
from computeshare_desktop.protocol.graphs import MAX_TRAINABLE_NUMEL

log = logging.getLogger(__name__)


_HINTS = (  # (words in torch's message, what to do)
    (("data-dependent", "data dependent", "GuardOnDataDependent"),
     "the forward branches on tensor values (data-dependent control flow): compute both "
     "sides and pick with torch.where, or move the decision out of forward (torch.cond "
     "graphs are not accepted by workers yet)"),
    (("Constraints violated", "specialized it to be a constant"),
     "the forward fixes the batch size: use x.shape[0] or x.flatten(1) instead of a number"),
    (("Unsupported", "not supported", "unsupported"),
     "the forward uses something torch.export cannot trace: keep forward to tensor "
     "operations, without Python side effects"),
)


@dataclass(frozen=True, slots=True)
class TrainingGraph:
    """What a worker needs to rebuild the hub's model, besides the trainable weights
    (which travel as the flat vector, in ``trainable`` order)."""

    program: bytes  # the graph: torch.export's JSON model schema, checked
    trainable: tuple[str, ...]  # FQNs of the trainable parameters, in flat-vector order
    state: dict[str, torch.Tensor]  # every other tensor: frozen params, buffers, constants
    aliases: dict[str, str]  # tied tensors: a second name -> the name that travels
    torch_version: str  # the hub's torch release, e.g. "2.14.1"
    op_count: int
    fingerprint: str  # graph_fingerprint(program, trainable specs, state specs)
    mutated: tuple[str, ...] = ()  # the buffers the graph updates in training, in its order
    trainable_numel: int = 0  # values in the flat vector: the trainable parameters'
    # the layer each node came from ("layer rnn: nn.LSTM"), for the hub's messages; never shipped
    layers: dict[str, str] = field(default_factory=dict)

    def explain(self, refused: GraphRefused) -> str:
        """A refusal of this graph for the person: the layer it concerns, then why."""
        return explain(refused, self.layers)

    def summary(self) -> str:
        return (f"{len(self.trainable)} trainable tensors, {len(self.state)} other tensors, "
                f"{self.op_count} ops, {len(self.program) // 1024} kB graph")


@contextmanager
def mode(model: nn.Module, training: bool) -> Iterator[None]:
    """Put ``model`` in train or eval mode and back. A program from torch.export has its
    mode fixed (its ``train()`` raises): it is left as it is."""
    was = model.training
    try:
        model.train(training)
    except NotImplementedError:
        yield
        return
    try:
        yield
    finally:
        model.train(was)


def frozen_norms(model: nn.Module) -> list[str]:
    """The normalization layers with running statistics (BatchNorm's kind) whose own
    parameters are all frozen (``--train-only`` froze them, or the model did): they run in
    eval mode in the training graph, normalizing with their running statistics and never
    updating them, so a frozen backbone stays exactly as loaded (and its statistics do
    not travel). A layer without parameters (``affine=False``) trains as usual."""
    frozen = []
    for name, module in model.named_modules():
        own = list(module.parameters(recurse=False))
        if (isinstance(module, nn.modules.batchnorm._NormBase) and module.track_running_stats
                and own and not any(p.requires_grad for p in own)):
            frozen.append(name)
    return frozen


def export_training_graph(model: nn.Module, example: torch.Tensor) -> TrainingGraph:
    """Export ``model`` in train mode for workers, but for its frozen normalization layers
    (``frozen_norms``). ``example`` is one input batch on the CPU, at least 2 samples (the
    batch dimension stays dynamic, from 2 up).

    Raises:
        ConfigError: the model does not export, or exports to a graph workers refuse; the
            message has the export error's first lines and a hint.
    """
    _check_inputs(model, example)
    _check_trainable_size(model)
    with mode(model, True):
        for name in frozen_norms(model):  # mode() puts them back with the rest
            model.get_submodule(name).eval()
        program = _exported(model, example)
    layers = node_layers(program)
    sized = tracing.data_dependent(program)
    if sized is not None:
        layer = layers.get(sized.name)
        raise ConfigError(refusal_text((f"{layer}: " if layer else "")
                                       + tracing.data_dependent_text(sized)))
    data = _serialized(program)
    try:
        checked = check_program(data, hub_torch=torch.__version__)
    except GraphRefused as refused:
        raise ConfigError(refusal_text(explain(refused, layers))) from None
    trainable = tuple(n for n, p in model.named_parameters() if p.requires_grad)
    missing = set(trainable) - checked.parameters.keys()
    if missing:
        raise ConfigError(f"trainable parameters missing from the exported graph: "
                          f"{sorted(missing)[:5]}")
    aliases = _aliases(model, {*checked.parameters, *checked.buffers})
    tensors = {**program.state_dict, **program.constants}
    state = {name: _plain(tensors[name]) for name in
             [*checked.parameters, *checked.buffers, *checked.constants]
             if name not in trainable and name not in aliases}
    specs = [TensorSpec.of(name, tensors[name]) for name in trainable]
    return TrainingGraph(
        program=data, trainable=trainable, state=state, aliases=aliases,
        torch_version=torch_release(), op_count=checked.op_count,
        fingerprint=graph_fingerprint(data, specs,
                                      [TensorSpec.of(n, t) for n, t in state.items()],
                                      aliases),
        mutated=tuple(checked.mutated), layers=layers,
        trainable_numel=sum(tensors[name].numel() for name in trainable))


def refusal_text(why: str) -> str:
    """What the hub says of a model whose graph workers would refuse."""
    return f"the model exports to a graph workers refuse: {why}"


def node_layers(program: torch.export.ExportedProgram) -> dict[str, str]:
    """Each node's innermost module as ``path: Type`` (``rnn: nn.LSTM``), from the
    metadata export keeps (stripped before shipping)."""
    layers = {}
    for node in program.graph.nodes:
        stack = [entry for entry in (node.meta.get("nn_module_stack") or {}).values()
                 if isinstance(entry, tuple) and len(entry) == 2
                 and not str(entry[0]).startswith("_empty")]
        if stack:
            path, kind = stack[-1]
            layers[node.name] = tracing.layer_label(path, _type_name(kind))
    return layers


def _type_name(kind: object) -> str:
    """``torch.nn.modules.rnn.LSTM`` -> ``nn.LSTM``; a class of the user's by its name."""
    text = kind if isinstance(kind, str) else getattr(kind, "__qualname__", str(kind))
    name = text.rsplit(".", 1)[-1]
    return f"nn.{name}" if text.startswith("torch.nn.") else name


def explain(refused: GraphRefused, layers: dict[str, str]) -> str:
    """A refusal with the layer it concerns in front (``layer rnn: nn.LSTM: ...``), when known."""
    layer = layers.get(refused.where or "")
    return refused.reason if layer is None else f"{layer}: {refused.reason}"


def _aliases(model: nn.Module, names: set[str]) -> dict[str, str]:
    """Tied tensors (one Parameter under two names): each later name the graph uses,
    mapped to the first, which is the one that travels."""
    first: dict[int, str] = {}
    aliases = {}
    for name, tensor in (*model.named_parameters(remove_duplicate=False),
                         *model.named_buffers(remove_duplicate=False)):
        if id(tensor) in first and name in names:
            aliases[name] = first[id(tensor)]
        first.setdefault(id(tensor), name)
    return aliases


def _check_inputs(model: nn.Module, example: torch.Tensor) -> None:
    if not isinstance(example, torch.Tensor) or example.dim() < 1:
        raise ConfigError("the example input must be a batch tensor")
    if example.shape[0] < MIN_BATCH:
        raise ConfigError(f"the example batch has {example.shape[0]} sample(s); export needs "
                          f"at least {MIN_BATCH}, or the batch size would be fixed")
    devices = {t.device.type for t in (example, *model.parameters(), *model.buffers())}
    if devices != {"cpu"}:
        raise ConfigError(f"export the model from the CPU (found {sorted(devices)})")


def _check_trainable_size(model: nn.Module) -> None:
    """Refuse, before the minutes an export of it takes, a model with more values to train
    than a model frame carries (the manifest's cap, which workers apply too)."""
    count = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if count > MAX_TRAINABLE_NUMEL:
        raise ConfigError(f"the model has {count:,} values to train, more than the "
                          f"{MAX_TRAINABLE_NUMEL:,} a model frame carries: train part of "
                          f"it (--train-only PREFIX, its head for example) or choose a "
                          f"smaller model")


def _exported(model: nn.Module, example: torch.Tensor) -> torch.export.ExportedProgram:
    batch = torch.export.Dim("batch", min=MIN_BATCH)
    printed = io.StringIO()  # a failing export prints its partial graph (torch's print)
    try:
        with redirect_stderr(printed), _rnn_internals_quiet(), tracing.rnn_dropout_kept():
            with tracing.custom_functions_refused(model):
                program = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
            tracing.detach_no_grad_outputs(program)
            program = program.run_decompositions(tracing.decompositions())
    except ConfigError:
        raise
    except Exception as err:  # torch raises many kinds; each becomes one clear error
        log.debug("what torch printed while the export failed:\n%s", printed.getvalue())
        layer = tracing.innermost_layer(tracing.traceback_frames(err), model)
        raise ConfigError(export_failure(err, layer)) from err
    if printed.getvalue():  # not ours to swallow when the export worked
        sys.stderr.write(printed.getvalue())
    _clone_running_stats(program)
    return program


def export_failure(err: BaseException, layer: str | None = None) -> str:
    """The export error's first lines and a hint, for the person who chose the model
    (``layer``: the module whose forward failed, ``layer rnn: nn.LSTM``, when known)."""
    text = str(err).strip() or type(err).__name__
    hint = next((advice for words, advice in _HINTS if any(w in text for w in words)),
                "simplify forward to tensor operations on its one input")
    where = f"{layer}: " if layer else ""
    return ("the model cannot be exported as a graph for workers: " + where
            + quoted_error(err) + f"\n  hint: {hint}")


def quoted_error(err: BaseException) -> str:
    """What ``export_failure`` quotes of ``err``: its type and first lines."""
    text = str(err).strip() or type(err).__name__
    lines = [line for line in text.splitlines() if line.strip()][:4]
    return type(err).__name__ + ": " + "\n  ".join(lines)


@contextmanager
def _rnn_internals_quiet() -> Iterator[None]:
    """torch warns that an RNN's ``_flat_weights`` were "assigned during export": its
    own layer's doing, nothing the person can change."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"The tensor attributes .*_flat_weights")
        yield


def _clone_running_stats(program: torch.export.ExportedProgram) -> None:
    """Feed functional BatchNorm copies of its running statistics. Its backward keeps the
    buffers it was given, and the unlifted module writes the new statistics into them
    after the forward; without the copy the backward fails ("modified by an inplace
    operation")."""
    batch_norm = torch.ops.aten._native_batch_norm_legit_functional.default
    graph = program.graph_module.graph
    for node in list(graph.nodes):
        if node.target is not batch_norm:
            continue
        args = list(node.args)
        with graph.inserting_before(node):
            for i in (3, 4):  # running_mean, running_var
                copy = graph.call_function(torch.ops.aten.clone.default, (args[i],))
                copy.meta["val"] = args[i].meta["val"]
                args[i] = copy
        node.args = tuple(args)
    program.graph_module.recompile()


def _serialized(program: torch.export.ExportedProgram) -> bytes:
    """The graph's JSON alone, without what is there for people: node metadata (stack
    traces, module paths, source functions) and the submodules' call entries."""
    from torch._export.serde.serialize import serialize

    artifact = serialize(program, serialize_state_dict=False, serialize_constants=False,
                         serialize_example_inputs=False)
    tree: dict[str, Any] = json.loads(artifact.exported_program)
    module = tree["graph_module"]
    for node in module["graph"]["nodes"]:
        node["metadata"] = {}
    module["metadata"] = {}
    module["module_call_graph"] = [e for e in module["module_call_graph"] if e["fqn"] == ""]
    return json.dumps(tree, separators=(",", ":"), allow_nan=False).encode()


def _plain(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU copy that is a plain tensor (not a Parameter), owned by no module."""
    return tensor.detach().to("cpu", copy=True).contiguous()
