"""The checks a worker runs on a graph's JSON before any of it reaches torch or sympy.

In order: a size cap on the bytes; the torch release (read alone first, so a mismatch gets
its own message); strict decoding into ``schema.ExportedProgram`` (which refuses custom
objects, pickled payloads, graphs of higher-order ops, guard code and anything unknown);
then the checks below on the decoded Structs: every node target on the allow-list
(``ops.py``), uninitialised memory only overwritten, every shape expression through the
grammar (``symbols.py``), names that are plain identifiers (torch.fx turns them into the
Python source of ``forward``), static sizes within bounds, and a signature of one tensor in,
one tensor out, with parameters, buffers and constants named once.

Everything here is pure: it reads Python values only and calls neither torch's
deserializer nor sympy.
"""

from __future__ import annotations

import builtins
import keyword
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import TypeVar

import msgspec

from computeshare_desktop.graph import ops, schema
from computeshare_desktop.graph.base import (
    MAX_BRANCHING,
    MAX_EXPRESSIONS,
    MAX_GRAPH_OPERATORS,
    MAX_PROGRAM_BYTES,
    MAX_STATIC_NUMEL,
    MIN_BATCH,
    GraphRefused,
    require_release,
)
from computeshare_desktop.graph.symbols import Expression, check_expression, is_symbol_name
from computeshare_desktop.protocol.paths import path_problem

# Names torch.fx's generated forward() reads as globals, or that Python gives a meaning.
RESERVED = frozenset({"self", "torch", "device", "inf", "nan", "NoneType", "fx_pytree",
                      "pytree", "builtins", "operator", "_operator", "math"})
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Meta:
    """A state tensor's declared shape and dtype (the schema's ScalarType number)."""

    shape: tuple[int, ...]
    dtype: int


@dataclass(slots=True)
class CheckedProgram:
    """A graph that passed every check, with what the loader needs to know about it."""

    program: schema.ExportedProgram
    parameters: dict[str, Meta] = field(default_factory=dict)  # FQN -> meta, graph order
    buffers: dict[str, Meta] = field(default_factory=dict)
    persistent: set[str] = field(default_factory=set)  # buffers in the state dict
    constants: dict[str, Meta] = field(default_factory=dict)
    ops: Counter[str] = field(default_factory=Counter)
    mutated: list[str] = field(default_factory=list)  # buffers it updates in training
    batch: str = ""  # the batch's symbol (``s77``): the one dynamic size

    @property
    def op_count(self) -> int:
        return sum(self.ops.values())


def check_program(program: bytes, *, hub_torch: str) -> CheckedProgram:
    """Check a graph's JSON completely, without deserializing it.

    Raises:
        GraphRefused: the first thing refused, as one line.
    """
    if not isinstance(program, bytes | bytearray | memoryview):
        raise GraphRefused("the graph is not bytes")
    if len(program) > MAX_PROGRAM_BYTES:
        raise GraphRefused(f"the graph is {len(program)} bytes, over the cap of "
                           f"{MAX_PROGRAM_BYTES}")
    require_release(hub_torch, _decode(program, schema.VersionOnly).torch_version)
    decoded = _decode(program, schema.ExportedProgram)
    _check_versions(decoded)
    checked = CheckedProgram(decoded)
    graph = decoded.graph_module.graph
    _check_names(decoded)
    _check_expressions(decoded, checked)
    _check_static_sizes(graph)
    _check_size_arguments(graph)
    for node in graph.nodes:
        ops.check_target(node.target, where=_node_name(node))
        checked.ops[node.target.removeprefix(ops.ATEN_PREFIX)] += 1
    _check_uninitialised(graph)
    _check_signature(decoded, checked)
    return checked


def _decode(program: bytes | bytearray | memoryview, kind: type[_T]) -> _T:
    try:
        return msgspec.json.decode(program, type=kind, strict=True)
    except msgspec.DecodeError as err:  # ValidationError is one too
        raise GraphRefused(f"the graph does not fit the accepted schema: {str(err)[:300]}") \
            from None
    except RecursionError:  # a field skipped unread still nests: [[[[...]]]] 10^5 deep
        raise GraphRefused("the graph's JSON nests too deeply") from None


def _check_versions(decoded: schema.ExportedProgram) -> None:
    version, opset = _local_versions()
    got = (decoded.schema_version.major, decoded.schema_version.minor)
    if got != version:
        raise GraphRefused(f"export schema {got[0]}.{got[1]}, this worker reads "
                           f"{version[0]}.{version[1]}")
    if decoded.opset_version != opset:
        raise GraphRefused(f"opset {decoded.opset_version}, this worker runs {opset}")


@cache
def _local_versions() -> tuple[tuple[int, int], dict[str, int]]:
    import torch
    from torch._export.serde.schema import SCHEMA_VERSION

    return (SCHEMA_VERSION[0], SCHEMA_VERSION[1]), {"aten": torch._C._get_max_operator_version()}


@cache
def expected_specs() -> tuple[str, str]:
    """The pytree specs of ``forward(x) -> tensor``, as the serializer writes them."""
    from torch.utils import _pytree as pytree

    return (pytree.treespec_dumps(pytree.tree_structure(((0,), {}))),
            pytree.treespec_dumps(pytree.tree_structure(0)))


# ------------------------------------------------------------------------------- names
def _check_name(name: str) -> None:
    if keyword.iskeyword(name) or name.startswith("__") or name in RESERVED \
            or (name in vars(builtins) and name != "input"):
        raise GraphRefused(f"the name {name!r} is not allowed")


def _check_fqn(fqn: str) -> None:
    """A module path's parts become attributes, never local names (``paths.py``)."""
    problem = path_problem(fqn)
    if problem is not None:
        raise GraphRefused(f"the module path {fqn!r} is not allowed: {problem}")


def _node_name(node: schema.Node) -> str | None:
    """The node's name, or its first output's (the serializer names nodes by those)."""
    if node.name is not None:
        return node.name
    return next((name for arg in node.outputs for name in _tensor_names(arg)), None)


def _arguments(node: schema.Node) -> Iterator[schema.Argument]:
    yield from (named.arg for named in node.inputs)
    yield from node.outputs


def _tensor_names(arg: schema.Argument) -> Iterator[str]:
    value = arg.value
    if arg.kind == "as_tensor":
        yield value.name
    elif arg.kind == "as_tensors":
        yield from (t.name for t in value)
    elif arg.kind == "as_optional_tensor" and value.kind == "as_tensor":
        yield value.as_tensor.name
    elif arg.kind == "as_optional_tensors":
        yield from (t.as_tensor.name for t in value if t.kind == "as_tensor")


def _sym_names(arg: schema.Argument) -> Iterator[str]:
    if arg.kind == "as_sym_int" and arg.value.kind == "as_name":
        yield arg.value.as_name
    elif arg.kind == "as_sym_ints":
        yield from (s.as_name for s in arg.value if s.kind == "as_name")


def _check_names(decoded: schema.ExportedProgram) -> None:
    graph = decoded.graph_module.graph
    names: set[str] = set(graph.tensor_values) | set(graph.sym_int_values)
    for node in graph.nodes:  # (argument names only select the op schema's arguments)
        if node.name is not None:
            names.add(node.name)
        for arg in _arguments(node):
            names.update(_tensor_names(arg))
            names.update(_sym_names(arg))
    for arg in (*graph.inputs, *graph.outputs):
        names.update(_tensor_names(arg))
    entry = decoded.graph_module.module_call_graph[0].signature
    names.update(entry.forward_arg_names)
    for name in names:
        _check_name(name)
    for spec in decoded.graph_module.signature.input_specs:
        if spec.kind != "user_input":
            _check_fqn(_target(spec))


# ------------------------------------------------------------------------ expressions
def _sym_ints(graph: schema.Graph) -> Iterator[schema.SymInt]:
    yield from graph.sym_int_values.values()
    for meta in graph.tensor_values.values():
        yield from meta.sizes
        yield from meta.strides
        yield meta.storage_offset


def _check_expressions(decoded: schema.ExportedProgram, checked: CheckedProgram) -> None:
    """Every expression in the grammar, naming the batch alone; each distinct one is parsed
    once (here and in torch's loader: ``rebuild.py``), so its count is what costs."""
    for symbol, bounds in decoded.range_constraints.items():
        if not is_symbol_name(symbol) or bounds.min_val is None or bounds.min_val < 0:
            raise GraphRefused(f"the range of {symbol!r} is not a size's")
    checked.batch = _batch_symbol(decoded)
    seen: dict[str, Expression] = {}
    for value in _sym_ints(decoded.graph_module.graph):
        if value.kind == "as_expr" and value.value.expr_str not in seen:
            text = value.value.expr_str
            seen[text] = expression = check_expression(text)
            if expression.symbols - {checked.batch}:
                raise GraphRefused(f"shape expression names a size other than the batch "
                                   f"({checked.batch}): {sorted(expression.symbols)}")
    if len(seen) > MAX_EXPRESSIONS:
        raise GraphRefused(f"the graph has {len(seen)} distinct shape expressions, over the "
                           f"cap of {MAX_EXPRESSIONS}")
    operators = sum(e.operators for e in seen.values())
    if operators > MAX_GRAPH_OPERATORS:
        raise GraphRefused(f"the graph's shape expressions have {operators} operators, over "
                           f"the cap of {MAX_GRAPH_OPERATORS}")
    branching = sum(e.branching for e in seen.values())
    if branching > MAX_BRANCHING:
        raise GraphRefused(f"the graph's shape expressions use Max, Min or FloorDiv "
                           f"{branching} times, over the cap of {MAX_BRANCHING}")


def _batch_symbol(decoded: schema.ExportedProgram) -> str:
    """The one dynamic size a hub exports: the input's first, the batch, from MIN_BATCH up.
    (A range may name a symbol the graph no longer uses: torch's export leaves some.)"""
    graph = decoded.graph_module.graph
    inputs = [_spec_name(s) for s in decoded.graph_module.signature.input_specs
              if s.kind == "user_input"]
    meta = graph.tensor_values.get(inputs[0]) if len(inputs) == 1 else None
    first = meta.sizes[0] if meta is not None and meta.sizes else None
    if first is None or first.kind != "as_expr":
        raise GraphRefused("the graph's input has no dynamic batch size")
    expression = check_expression(first.value.expr_str)
    (symbol,) = expression.symbols if len(expression.symbols) == 1 else ("",)
    bounds = decoded.range_constraints.get(symbol)
    if expression.operators or bounds is None or bounds.min_val != MIN_BATCH \
            or not (bounds.max_val is None or bounds.max_val >= MIN_BATCH):
        raise GraphRefused(f"the graph's batch size is not a symbol from {MIN_BATCH} up")
    return symbol


def _check_static_sizes(graph: schema.Graph) -> None:
    """Declared sizes are bounded. A view's storage offset and strides (a slice of an LSTM's
    gates, a token selected in attention) are declared too; torch's deserializer reads
    neither into memory (its fake tensors are empty_strided), so they need only be sane."""
    for name, meta in graph.tensor_values.items():
        declared = [meta.storage_offset, *meta.strides]
        if any(s.kind == "as_int" and s.value < 0 for s in declared):
            raise GraphRefused(f"tensor {name!r} declares a negative stride or offset",
                               where=name)
        sizes = [s.value for s in meta.sizes if s.kind == "as_int"]
        # each size too: [0, 2**62, 2**62] holds nothing, yet overflows torch's strides
        if any(not 0 <= size <= MAX_STATIC_NUMEL for size in sizes) \
                or math.prod(sizes) > MAX_STATIC_NUMEL:
            raise GraphRefused(f"tensor {name!r} declares sizes {sizes}", where=name)


def _check_size_arguments(graph: schema.Graph) -> None:
    """The sizes an op is told to allocate (full, empty, repeat, arange ...) are what torch
    allocates, whatever the graph declares for the result: cap their static part."""
    for node in graph.nodes:
        if node.target == ops.ATEN_PREFIX + "arange.start_step":
            numel = _arange_numel(node)
        else:
            numel = math.prod(abs(i) for i in _size_ints(node))
        if numel > MAX_STATIC_NUMEL:
            raise GraphRefused(f"{node.target} asks for {numel:.0f} elements",
                               where=_node_name(node))


def _size_ints(node: schema.Node) -> list[int]:
    """The static ints of the argument that says how many elements ``node`` allocates."""
    sized = ops.size_argument(node.target)
    arg = next((named.arg for named in node.inputs if named.name == sized), None)
    if arg is None:
        return []
    if arg.kind == "as_int":
        return [arg.value]
    if arg.kind == "as_ints":
        return list(arg.value)
    if arg.kind == "as_sym_ints":
        return [s.value for s in arg.value if s.kind == "as_int"]
    return []


def _arange_numel(node: schema.Node) -> float:
    """How many elements ``arange(start, end, step)`` makes, from whichever of them are
    numbers (a float end or a negative start counts as much as an int one); 0 when one is
    a symbol (the shape checks bound those at the batch sizes they try)."""
    values: dict[str, float] = {"step": 1.0}
    for named in node.inputs:
        arg = named.arg
        if named.name not in ("start", "end", "step"):
            continue
        value = arg.value
        if arg.kind == "as_sym_int":
            if value.kind == "as_name":
                return 0.0
            value = value.value
        elif arg.kind not in ("as_int", "as_float") or isinstance(value, str):
            return math.inf  # "NaN", "Infinity" or no number at all
        values[named.name] = float(value)
    if not all(math.isfinite(v) for v in values.values()) or values["step"] == 0 \
            or "start" not in values or "end" not in values:
        return math.inf
    return max(0.0, math.ceil((values["end"] - values["start"]) / values["step"]))


def _check_uninitialised(graph: schema.Graph) -> None:
    fresh: set[str] = set()
    for node in graph.nodes:
        if ops.is_uninitialised(node.target):
            for arg in node.outputs:
                fresh.update(_tensor_names(arg))
            continue
        allowed = ops.overwritten_argument(node.target)
        for named in node.inputs:
            if named.name != allowed and fresh.intersection(_tensor_names(named.arg)):
                raise GraphRefused(f"{node.target} reads uninitialised memory",
                                   where=_node_name(node))
    for arg in graph.outputs:
        if fresh.intersection(_tensor_names(arg)):
            raise GraphRefused("the graph returns uninitialised memory")


# -------------------------------------------------------------------------- signature
def _target(spec: schema.InputSpec) -> str:
    value = spec.value
    return {"parameter": lambda: value.parameter_name, "buffer": lambda: value.buffer_name,
            "tensor_constant": lambda: value.tensor_constant_name}[spec.kind]()


def _meta(graph: schema.Graph, name: str) -> Meta:
    meta = graph.tensor_values.get(name)
    if meta is None or any(s.kind != "as_int" for s in meta.sizes):
        raise GraphRefused(f"state tensor {name!r} has no fixed shape")
    return Meta(tuple(s.value for s in meta.sizes), meta.dtype)


def _check_batch_input(graph: schema.Graph, name: str, batch: str) -> None:
    """The input is a batch: its first size the batch's symbol, every other size fixed
    (what the shape checks of ``shapes.py`` take as the worker's input)."""
    meta = graph.tensor_values.get(name)
    sizes = [] if meta is None else meta.sizes
    first = sizes[0].value.expr_str if sizes and sizes[0].kind == "as_expr" else ""
    if not first or check_expression(first) != Expression(frozenset({batch}), 0, 0) \
            or any(size.kind != "as_int" for size in sizes[1:]):
        raise GraphRefused("the graph's input is not a batch of fixed-size samples")


def _tensor_only(args: list[schema.Argument], what: str) -> list[str]:
    if any(a.kind != "as_tensor" for a in args):
        raise GraphRefused(f"the graph's {what} must all be tensors")
    return [a.value.name for a in args]


def _spec_name(spec: schema.InputSpec | schema.OutputSpec) -> str:
    arg = spec.value.arg
    return arg.value.name if isinstance(arg, schema.Argument) else arg.name


def _check_signature(decoded: schema.ExportedProgram, checked: CheckedProgram) -> None:
    module = decoded.graph_module
    graph, signature = module.graph, module.signature
    if _tensor_only(graph.inputs, "inputs") != [_spec_name(s) for s in signature.input_specs]:
        raise GraphRefused("the graph's inputs differ from its signature")
    if sum(spec.kind == "user_input" for spec in signature.input_specs) != 1:
        raise GraphRefused("the graph must take exactly one tensor")
    for spec in signature.input_specs:
        if spec.kind == "user_input":
            _check_batch_input(graph, _spec_name(spec), checked.batch)
            continue
        target, meta = _target(spec), _meta(graph, spec.value.arg.name)
        if target in checked.parameters or target in checked.buffers \
                or target in checked.constants:
            raise GraphRefused(f"state tensor {target!r} named twice")
        {"parameter": checked.parameters, "buffer": checked.buffers,
         "tensor_constant": checked.constants}[spec.kind][target] = meta
        if spec.kind == "buffer" and spec.value.persistent:
            checked.persistent.add(target)
    _check_outputs(decoded, checked)


def _check_outputs(decoded: schema.ExportedProgram, checked: CheckedProgram) -> None:
    module = decoded.graph_module
    outputs = module.signature.output_specs
    if _tensor_only(module.graph.outputs, "outputs") != [_spec_name(s) for s in outputs]:
        raise GraphRefused("the graph's outputs differ from its signature")
    if sum(spec.kind == "user_output" for spec in outputs) != 1:
        raise GraphRefused("the graph must return exactly one tensor")
    mutated = [spec.value.buffer_name for spec in outputs if spec.kind == "buffer_mutation"]
    if len(set(mutated)) != len(mutated) or not set(mutated) <= checked.buffers.keys():
        raise GraphRefused("the graph updates a buffer it does not have, or one twice")
    checked.mutated = mutated
    call = module.module_call_graph[0].signature
    if (call.in_spec, call.out_spec) != expected_specs() or len(call.forward_arg_names) != 1:
        raise GraphRefused("the graph's calling convention is not forward(x) -> tensor")
