"""Hostile graphs, built by hand from a real one, are refused without running anything.

Each payload calls the canary (``graph_canary.trip``) if any loader executes it; the
positive controls show it does on torch's own, unchecked path. On ours, the refusal comes
with a reason, the canary file is never written, and the guards (``unsafe_calls``) record
no call to pickle, torch.load, torch.export.load, sympy.sympify, exec/eval of text or
torch's deserializer.
"""

from __future__ import annotations

import base64
import pickle
import random

import graph_canary
import msgspec
import pytest
import torch
from graph_nets import edited, first_node, graph_of
from torch import nn

from computeshare_desktop.graph import GraphRefused, load_training_graph, torch_release
from computeshare_desktop.graph.base import MAX_PROGRAM_BYTES

CODE = "__import__('graph_canary').trip('{}')"
PICKLED = base64.b64encode(pickle.dumps(graph_canary.Payload())).decode()
SYMBOL = "Symbol('s77', positive=True, integer=True)"


def refuse(exported, program: bytes, unsafe_calls, canary, match: str, *,
           hub_torch: str | None = None, state: dict | None = None) -> str:
    _, graph = exported
    with pytest.raises(GraphRefused, match=match) as info:
        load_training_graph(program, graph.trainable,
                            graph.state if state is None else state,
                            hub_torch=hub_torch or torch.__version__)
    assert unsafe_calls == [], unsafe_calls
    assert not canary.exists() and graph_canary.calls == []
    return info.value.reason


def unchecked(program: bytes, exported, example: torch.Tensor | None = None) -> nn.Module:
    """torch's own path, without our checks (positive controls only)."""
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _dict_to_dataclass

    model, graph = exported
    state = {n: nn.Parameter(p.detach().clone()) for n, p in model.named_parameters()}
    state.update({n: t.clone() for n, t in graph.state.items() if n not in state})
    constants = {n: state.pop(n) for n in ("temperature", "lifted_tensor_0")}
    tree = _dict_to_dataclass(schema.ExportedProgram, msgspec.json.decode(program))
    inputs = None if example is None else ((example,), {})
    return ExportedProgramDeserializer().deserialize(tree, state, constants, inputs).module()


# ----------------------------------------------------------------- pickled payloads
def test_the_pickled_payload_is_live(canary):
    pickle.loads(base64.b64decode(PICKLED))
    assert canary.exists()


@pytest.mark.parametrize("where, edit", [
    ("a pickled constants blob", lambda t: t.update(constants=PICKLED)),
    ("example inputs", lambda t: t.update(example_inputs=PICKLED)),
    ("a use_pickle payload", lambda t: t["graph_module"].update(payload_config={"c": {
        "path_name": PICKLED, "is_param": False, "use_pickle": True, "tensor_meta": None}})),
    ("a custom-object input", lambda t: t["graph_module"]["signature"]["input_specs"].insert(
        0, {"custom_obj": {"arg": {"name": "obj", "class_fqn": "graph_canary.Payload"},
                           "custom_obj_name": PICKLED}})),
    ("a custom-object value", lambda t: graph_of(t)["custom_obj_values"].update(
        obj={"name": "obj", "class_fqn": "graph_canary.Payload"})),
    ("a custom-object argument", lambda t: first_node(t, "torch.ops.aten.gelu.default")
        ["inputs"].append({"name": "obj", "arg": {"as_custom_obj": {
            "name": "obj", "class_fqn": "graph_canary.Payload"}}, "kind": 1})),
    ("an opaque operator argument", lambda t: first_node(t, "torch.ops.aten.gelu.default")
        ["inputs"].append({"name": "op", "arg": {"as_operator": "torch.load"}, "kind": 1})),
])
def test_pickled_and_custom_entries_are_refused(exported, unsafe_calls, canary, where, edit):
    refuse(exported, edited(exported[1].program, edit), unsafe_calls, canary,
           "does not fit the accepted schema")


class Canary(torch.Tensor):
    """A tensor subclass whose every torch call trips the canary."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        graph_canary.trip("subclass")
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.mark.parametrize("swap", [
    lambda t: base64.b64decode(PICKLED),  # pickled bytes where a tensor belongs
    lambda t: t.as_subclass(Canary),
    lambda t: t.to_sparse() if t.dim() else t.reshape(1),
])
def test_state_that_is_not_a_plain_tensor_is_refused(exported, unsafe_calls, canary, swap):
    state = dict(exported[1].state)
    state["stem.1.running_var"] = swap(state["stem.1.running_var"])
    refuse(exported, exported[1].program, unsafe_calls, canary,
           "stem.1.running_var", state=state)


# ---------------------------------------------------------------------- operations
@pytest.fixture
def planted(monkeypatch):
    """torch.canary_op: what a node naming an arbitrary torch attribute would resolve to."""
    monkeypatch.setattr(torch, "canary_op", graph_canary.trip, raising=False)


@torch.library.custom_op("graph_canary::trip", mutates_args=())
def registered_canary(self: torch.Tensor) -> torch.Tensor:
    """A registered operator that trips the canary: torch's verifier lets any operator
    through, the allow-list does not."""
    graph_canary.trip("operator")
    return self.clone()


@registered_canary.register_fake
def _(self: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(self)


def gelu_as(target: str):
    def edit(tree):
        node = first_node(tree, "torch.ops.aten.gelu.default")
        node.update(target=target, inputs=node["inputs"][:1])
    return edit


def test_a_registered_operator_runs_on_torchs_own_path(exported, canary):
    program = edited(exported[1].program, gelu_as("torch.ops.graph_canary.trip.default"))
    unchecked(program, exported)(torch.randn(2, 3, 16, 16))
    assert canary.exists()


@pytest.mark.parametrize("target, why", [
    ("torch.canary_op", "not allowed"),
    ("torch.ops.graph_canary.trip.default", "not allowed"),
    ("torch.load", "not allowed"),
    ("torch.hub.load", "not allowed"),
    ("builtins.exec", "not allowed"),
    ("math.sqrt", "not allowed"),
    ("_operator.pow", "not allowed"),
    ("torch.ops.higher_order.cond", "not allowed"),
    ("torch.ops.prims.convert_element_type.default", "not allowed"),
    ("torch.ops.aten.resize_.default", "in place"),
    ("torch.ops.aten.gelu.default.__call__", "not allowed"),
])
def test_ops_off_the_allow_list_are_refused(exported, planted, unsafe_calls, canary, target,
                                            why):
    reason = refuse(exported, edited(exported[1].program, gelu_as(target)), unsafe_calls,
                    canary, why)
    assert target[:60] in reason


# ---------------------------------------------------------------- shape expressions
def x_size(expr: str):
    return lambda t: graph_of(t)["tensor_values"]["x"]["sizes"][0]["as_expr"].update(
        expr_str=expr)


def test_code_in_a_shape_expression_runs_on_torchs_own_path(exported, canary):
    program = edited(exported[1].program, x_size(f"{SYMBOL} + {CODE.format('sympy')}"))
    with pytest.raises(Exception):  # noqa: B017 (the canary ran before torch gave up)
        unchecked(program, exported)
    assert canary.exists()


@pytest.mark.parametrize("expr", [
    f"{SYMBOL} + {CODE.format('sympy')}",
    CODE.format("sympy"),
    f"Mul(Integer(2), {SYMBOL}).__class__",
    f"Add({SYMBOL}, Integer(1)); {CODE.format('x')}",
    "Symbol('s77', positive=True, integer=True, evaluate=__import__('os'))",
    "Symbol('__import__', integer=True)",
    "Symbol(\"s77\", integer=True)",
    f"Pow({SYMBOL}, Integer(2))",
    "Integer(10**100)",
    "lambda: 0",
])
def test_code_in_shape_expressions_is_refused(exported, unsafe_calls, canary, expr):
    refuse(exported, edited(exported[1].program, x_size(expr)), unsafe_calls, canary,
           "shape expression|without a range")


def test_a_range_constraint_carrying_code_is_refused(exported, unsafe_calls, canary):
    program = edited(exported[1].program, lambda t: t["range_constraints"].update(
        {CODE.format("range"): {"min_val": 2, "max_val": None}}))
    refuse(exported, program, unsafe_calls, canary, "accepted schema")


# --------------------------------------------------------------------- guard code
def test_guard_code_runs_on_torchs_own_path(exported, canary):
    program = edited(exported[1].program, lambda t: t.update(
        guards_code=[CODE.format("guards")]))
    module = unchecked(program, exported, example=torch.randn(4, 3, 16, 16))
    try:
        module(torch.randn(4, 3, 16, 16))
    except Exception:  # noqa: S110 (the guard ran before whatever failed)
        pass
    assert canary.exists()


def test_guard_code_is_refused(exported, unsafe_calls, canary):
    program = edited(exported[1].program, lambda t: t.update(
        guards_code=[CODE.format("guards")]))
    refuse(exported, program, unsafe_calls, canary, "guards_code")


# ------------------------------------------------------------ names and metadata
@pytest.mark.parametrize("edit", [
    lambda t: first_node(t, "torch.ops.aten.gelu.default").update(
        name=f"gelu = {CODE.format('name')}"),
    lambda t: first_node(t, "torch.ops.aten.gelu.default").update(name="__class__"),
    lambda t: first_node(t, "torch.ops.aten.gelu.default").update(name="torch"),
    lambda t: first_node(t, "torch.ops.aten.gelu.default").update(name="lambda"),
    lambda t: t["graph_module"]["signature"]["input_specs"][0]["parameter"].update(
        parameter_name="stem.__class__"),
    lambda t: t["graph_module"]["module_call_graph"][0]["signature"].update(
        forward_arg_names=["x=__import__('os')"]),
    lambda t: first_node(t, "torch.ops.aten.gelu.default")["metadata"].update(
        stack_trace="File x\n  " + CODE.format("trace")),
    lambda t: first_node(t, "torch.ops.aten.gelu.default")["metadata"].update(
        source_fn_stack="gelu,torch.canary_op"),
    lambda t: t["graph_module"]["module_call_graph"].append({"fqn": "stem", "signature": None}),
])
def test_names_and_metadata_that_could_reach_code_are_refused(exported, unsafe_calls,
                                                              canary, edit):
    refuse(exported, edited(exported[1].program, edit), unsafe_calls, canary,
           "accepted schema|not allowed")


def test_uninitialised_memory_a_worker_would_send_back_is_refused(exported, unsafe_calls,
                                                                  canary):
    def edit(tree):
        node = first_node(tree, "torch.ops.aten.gelu.default")
        node["target"] = "torch.ops.aten.empty.memory_format"
        node["inputs"] = [{"name": "size", "arg": {"as_ints": [4, 8, 16, 16]}, "kind": 1}]
    refuse(exported, edited(exported[1].program, edit), unsafe_calls, canary,
           "uninitialised memory")


# ------------------------------------------------------------- versions and sizes
def test_another_torch_release_is_refused_naming_both(exported, unsafe_calls, canary):
    program = edited(exported[1].program, lambda t: t.update(torch_version="2.13.0+cpu"))
    reason = refuse(exported, program, unsafe_calls, canary, "torch", hub_torch="2.13.0")
    assert "2.13.0" in reason and torch_release() in reason
    reason = refuse(exported, program, unsafe_calls, canary, "made by torch 2.13.0")


def test_local_build_tags_do_not_matter(exported):
    model, graph = exported
    program = edited(graph.program, lambda t: t.update(torch_version=torch_release() + "+cpu"))
    load_training_graph(program, graph.trainable, graph.state,
                        hub_torch=torch_release() + "+cu130")


def test_an_oversized_graph_is_refused_before_parsing(exported, unsafe_calls, canary,
                                                      monkeypatch):
    def decode(*args, **kwargs):
        unsafe_calls.append("msgspec.json.decode")
    monkeypatch.setattr(msgspec.json, "decode", decode)
    program = exported[1].program + b" " * MAX_PROGRAM_BYTES
    refuse(exported, program, unsafe_calls, canary, "over the cap")


def test_state_that_does_not_match_the_graph_is_refused(exported, unsafe_calls, canary):
    _, graph = exported
    state = dict(graph.state)
    del state["stem.1.running_mean"]
    refuse(exported, graph.program, unsafe_calls, canary, "missing", state=state)
    state = {**graph.state, "stem.1.running_mean": torch.zeros(9)}
    refuse(exported, graph.program, unsafe_calls, canary, "graph wants", state=state)


def test_tied_names_that_do_not_fit_are_refused(exported, canary):
    _, graph = exported
    state = dict(graph.state)
    del state["stem.1.running_var"]
    for aliases in ({"stem.1.running_var": "stem.1.running_mean"},  # fits: loads
                    {"stem.1.running_var": "stem.1.num_batches_tracked"},
                    {"stem.1.running_var": "stem.0.weight"}, {"nowhere": "stem.0.weight"}):
        try:
            load_training_graph(graph.program, graph.trainable, state,
                                hub_torch=torch.__version__, aliases=aliases)
            assert aliases == {"stem.1.running_var": "stem.1.running_mean"}
        except GraphRefused as refused:
            assert "tied names" in refused.reason
    assert not canary.exists()


# ------------------------------------------------------------------ the invariant
def test_mutated_graphs_load_or_are_refused_never_anything_else(exported, canary):
    """h11's invariant for the loader: garbage either loads or raises GraphRefused."""
    _, graph = exported
    rng = random.Random(18)
    program = graph.program
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(40):
        data = bytearray(program)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            data[at:at + rng.randint(0, 3)] = bytes(rng.choices(b'{}[]",:0123sx .\\', k=2))
        try:
            load_training_graph(bytes(data), graph.trainable, graph.state,
                                hub_torch=torch.__version__)
            outcomes["loaded"] += 1
        except GraphRefused:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0 and not canary.exists()


def _leaves(tree: object, path: tuple = ()) -> list[tuple]:
    if isinstance(tree, dict):
        return [p for k, v in tree.items() for p in _leaves(v, (*path, k))]
    if isinstance(tree, list):
        return [p for i, v in enumerate(tree) for p in _leaves(v, (*path, i))]
    return [path]


def test_graphs_with_changed_values_load_or_are_refused(exported, canary):
    """The same invariant one level up: well-formed JSON whose values were changed (names
    swapped, numbers and kinds replaced) reaches the checks, and sometimes torch."""
    _, graph = exported
    rng = random.Random(2)
    values = [0, 1, -1, 2**40, 2**63, "x", "s77", "p_stem_0_weight", "convolution", None,
              True, 3.5, [], {}, "torch.ops.aten.relu.default"]
    seen = set()
    for _ in range(60):
        def edit(tree):
            paths = _leaves(tree)
            for _ in range(rng.randint(1, 2)):
                *parents, last = rng.choice(paths)
                owner = tree
                for key in parents:
                    owner = owner[key]
                owner[last] = rng.choice(values)
        try:
            load_training_graph(edited(graph.program, edit), graph.trainable, graph.state,
                                hub_torch=torch.__version__)
            seen.add("loaded")
        except GraphRefused as refused:
            seen.add("torch" if "torch could not" in refused.reason else "checks")
    assert {"loaded", "checks"} <= seen and not canary.exists()
