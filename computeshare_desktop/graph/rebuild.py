"""torch's deserializer, fed what the checks validated, without its two slow habits.

A checked graph becomes an ``ExportedProgram`` through torch's own
``GraphModuleDeserializer`` (the node, argument and signature rules are torch's), with two
changes that alter what it builds in no way:

- the validated Structs become torch's schema dataclasses by ``torch_schema_program``, the
  algorithm of torch's ``_dict_to_dataclass`` with each class's type hints worked out once
  (torch's asks ``typing.get_type_hints`` again for every object: half of a GRU's load);
- each distinct shape expression goes to sympy once (``_once_per_expression``): torch parses
  the text again at every size and stride that repeats it, thousands of times in an RNN,
  so a graph's sympy work is what its distinct expressions cost, which ``checks.py`` caps.

Only this module and ``loader.py`` touch torch's private serde API; the torch release is the
hub's (``base.require_release``), so both sides run the same code.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any

import msgspec
import sympy  # type: ignore[import-untyped]
import torch
from torch._export.serde import schema as torch_schema
from torch._export.serde import serialize as torch_serialize
from torch._export.serde.union import _Union
from torch.export import exported_program as ep
from torch.fx.experimental import symbolic_shapes
from torch.utils._sympy.numbers import int_oo

from computeshare_desktop.graph import schema


def torch_schema_program(program: schema.ExportedProgram) -> torch_schema.ExportedProgram:
    """The validated program as torch's schema dataclasses (what ``_dict_to_dataclass``
    makes of the same tree, field for field)."""
    return _convert(torch_schema.ExportedProgram, msgspec.to_builtins(program))


@functools.cache
def _plan(cls: Any) -> tuple[str, Any]:
    """How ``_dict_to_dataclass`` treats values of ``cls``: the same tests, in its order."""
    cls = torch_serialize._resolve_schema_cls(cls)
    if typing.get_origin(cls) is typing.Annotated:
        return "alias", cls.__origin__
    if typing.get_origin(cls) in (typing.Union, types.UnionType) \
            and type(None) in typing.get_args(cls):
        return "optional", typing.get_args(cls)[0]
    hints = typing.get_type_hints(cls, globalns=vars(torch_schema)) \
        if isinstance(cls, type) and dataclasses.is_dataclass(cls) else {}
    if isinstance(cls, type) and issubclass(cls, _Union):
        return "union", (cls, hints)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        return "dataclass", (cls, [(f.name, hints[f.name]) for f in dataclasses.fields(cls)])
    return "value", cls


def _convert(cls: Any, data: Any) -> Any:
    kind, how = _plan(cls)
    if kind == "alias":
        return _convert(how, data)
    if kind == "optional":
        return None if data is None else _convert(how, data)
    if kind == "union":
        (member, value), = data.items()  # the checks let one-member objects through only
        return how[0].create(**{member: _convert(how[1][member], value)})
    if kind == "dataclass":
        return how[0](**{name: _convert(hint, data[name]) for name, hint in how[1]
                         if name in data})
    if isinstance(data, list):
        return [_convert(typing.get_args(how)[0], item) for item in data] if data else data
    if isinstance(data, dict):
        value_type = typing.get_args(how)[1]
        return {key: _convert(value_type, value) for key, value in data.items()}
    return float(data) if how is float else data


def _once_per_expression() -> torch_serialize.GraphModuleDeserializer:
    """torch's graph deserializer, parsing each distinct expression once. Its parse of a
    text (or a sub-expression) with a hint has the same effect on the shape environment
    every time, so the first result stands for the rest. (torch makes the class final: the
    instance's own method is wrapped instead, for this instance only.)"""
    deserializer = torch_serialize.GraphModuleDeserializer()
    parse = deserializer._parse_sym_expr
    parsed: dict[tuple[object, object], sympy.Expr] = {}

    def parse_once(expr_str: Any, hint: Any = None) -> sympy.Expr:
        key = (expr_str, hint)
        if key not in parsed:
            parsed[key] = parse(expr_str, hint)
        return parsed[key]

    deserializer._parse_sym_expr = parse_once  # type: ignore[method-assign]
    return deserializer


def deserialize(program: torch_schema.ExportedProgram, state_dict: dict[str, torch.Tensor],
                constants: dict[str, torch.Tensor]) -> ep.ExportedProgram:
    """``ExportedProgramDeserializer().deserialize(program, state_dict, constants, None)``
    as torch 2.14 writes it, with ``_once_per_expression`` as its graph deserializer (the
    checks did its version test already)."""
    to_sympy = torch_serialize._int_to_sympy_int
    ranges = {name: symbolic_shapes.ValueRanges(to_sympy(bounds.min_val, -int_oo),
                                                to_sympy(bounds.max_val, int_oo))
              for name, bounds in program.range_constraints.items()}
    res = _once_per_expression().deserialize(program.graph_module, state_dict, constants, None,
                                           ranges)
    symbols = res.names_to_symbols
    result = ep.ExportedProgram(
        root=res.graph_module, graph=res.graph_module.graph, graph_signature=res.signature,
        state_dict=res.state_dict,
        range_constraints={symbols[k]: v for k, v in ranges.items() if k in symbols},
        module_call_graph=res.module_call_graph, example_inputs=res.example_inputs,
        constants=res.constants,
        verifiers=[torch_serialize.load_verifier(v) for v in program.verifiers])
    result._guards_code = program.guards_code
    return result
