"""Hostile graphs, built by editing a real export's JSON, as parts a
worker fetches (manifest, program, state), with what each refusal must say.

A hostile hub makes its parts hold together (sizes, sha256, the trainable count its graph
declares): only what the worker itself checks stands between such a graph and its memory.
Used by test_graph_hostile_bounds.py and by its memory child (graph_bounds_child.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from graph_nets import TinyResNet

from computeshare_desktop.graph import TrainingGraph, torch_release
from computeshare_desktop.protocol.graphs import (Manifest, encode_manifest, entry,
                                                  program_sha256, state_blob)

FINGERPRINT = "0123456789abcdef"  # the hub announces whatever its manifest says
S = "Symbol('s77', positive=True, integer=True)"
Tree = dict[str, Any]


class Ballasted(TinyResNet):
    """The stranger's network with 32 MiB of frozen weights, so that what a manifest
    declares is large against what Python and torch need to check a graph at all."""

    def __init__(self) -> None:
        super().__init__()
        self.ballast = torch.nn.Parameter(torch.zeros(2**23), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) + self.ballast[:1] * 0


@dataclass(frozen=True)
class Hostile:
    """One hostile graph: edits of a real graph's JSON and state, and the refusal."""

    name: str
    match: str  # a regular expression the refusal's reason must match
    tree: Callable[[Tree], None] = lambda tree: None
    state: Callable[[dict[str, torch.Tensor]], None] = lambda state: None
    numel: int | None = None  # the manifest's trainable count (None: what the graph says)
    raw: Callable[[bytes], bytes] | None = None  # replaces the program's bytes outright
    note: str = field(default="", compare=False)

    def parts(self, graph: TrainingGraph) -> dict[str, bytearray]:
        """The parts a hostile hub serves: its graph, and a manifest that fits it."""
        tree = json.loads(graph.program)
        self.tree(tree)
        program = json.dumps(tree).encode()
        if self.raw is not None:
            program = self.raw(program)
        state = dict(graph.state)
        self.state(state)
        numel = declared_numel(tree, graph.trainable) if self.numel is None else self.numel
        return served(program, state, list(graph.trainable), graph.aliases, numel)


def served(program: bytes, state: dict[str, torch.Tensor], trainable: list[str],
           aliases: dict[str, str], numel: int, fingerprint: str = FINGERPRINT,
           op_count: int = 1) -> dict[str, bytearray]:
    """The three parts as a hub serves them, holding together."""
    entries = [entry(name, tensor) for name, tensor in state.items()]
    blob = state_blob(entries, state)
    manifest = Manifest(model="hostile", trainable=trainable, aliases=dict(aliases),
                        state=entries, stats=[], program_bytes=len(program),
                        program_sha256=program_sha256(program), state_bytes=len(blob),
                        op_count=op_count, fingerprint=fingerprint, trainable_numel=numel)
    return {"manifest": bytearray(encode_manifest(manifest)), "program": bytearray(program),
            "state": bytearray(blob)}


def legit(graph: TrainingGraph) -> dict[str, bytearray]:
    """The real graph's parts, as its hub serves them."""
    return served(graph.program, dict(graph.state), list(graph.trainable), graph.aliases,
                  graph.trainable_numel, graph.fingerprint, graph.op_count)


def declared_bytes(parts: dict[str, bytearray]) -> int:
    """What the manifest says the module will hold: the state, and the trainable values
    as the float32 of the model frames."""
    manifest = json.loads(parts["manifest"])
    return manifest["state_bytes"] + 4 * manifest["trainable_numel"]


def declared_numel(tree: Tree, trainable: tuple[str, ...]) -> int:
    """The trainable values the graph declares (what a hub that lies consistently says)."""
    specs = tree["graph_module"]["signature"]["input_specs"]
    names = {s["parameter"]["parameter_name"]: s["parameter"]["arg"]["name"]
             for s in specs if "parameter" in s}
    values = graph_of(tree)["tensor_values"]
    return sum(math.prod(d["as_int"] for d in values[names[n]]["sizes"]) for n in trainable)


def graph_of(tree: Tree) -> Tree:
    return tree["graph_module"]["graph"]


def node(tree: Tree, target: str, nth: int = 0) -> Tree:
    return [n for n in graph_of(tree)["nodes"] if n["target"] == "torch.ops.aten." + target][nth]


def resize(*names: str, size: int = 1) -> Callable[[Tree], None]:
    """Declare the named tensor values 1-d of ``size`` elements."""
    def edit(tree: Tree) -> None:
        for name in names:
            graph_of(tree)["tensor_values"][name].update(
                sizes=[{"as_int": size}], strides=[{"as_int": 1}])
    return edit


def state_resized(name: str, size: int = 1) -> Callable[[dict[str, torch.Tensor]], None]:
    def edit(state: dict[str, torch.Tensor]) -> None:
        state[name] = torch.zeros(size)
    return edit


def replace_gelu(target: str, inputs: list[Tree]) -> Callable[[Tree], None]:
    """The first GELU becomes ``target`` on those inputs; its result keeps GELU's declared
    shape and dtype (a hostile hub declares what it likes)."""
    def edit(tree: Tree) -> None:
        gelu = node(tree, "gelu.default")
        gelu.update(target="torch.ops.aten." + target, inputs=inputs)
    return edit


def arg(name: str, kind: str, value: object) -> Tree:
    return {"name": name, "arg": {kind: value}, "kind": 1}


def sym_ints(texts: list[str]) -> Callable[[Tree], None]:
    """Add named sizes holding these expressions (a graph may declare sizes it never uses)."""
    def edit(tree: Tree) -> None:
        for i, text in enumerate(texts):
            graph_of(tree)["sym_int_values"][f"hostile_{i}"] = {
                "as_expr": {"expr_str": text, "hint": None}}
    return edit


def first_size(text: str) -> Callable[[Tree], None]:
    """The first GELU's declared batch size becomes ``text``."""
    def edit(tree: Tree) -> None:
        graph_of(tree)["tensor_values"]["gelu"]["sizes"][0] = {
            "as_expr": {"expr_str": text, "hint": {"as_int": 4}}}
    return edit


def costliest_strides(tree: Tree) -> None:
    """The strides of the graph's tensors (which torch parses and fakes, but nothing
    compares) become the most shape arithmetic the caps allow: distinct expressions of 8
    operators each, 1,024 operators, 32 of them Max, Min or FloorDiv."""
    strides = [s for meta in graph_of(tree)["tensor_values"].values() for s in meta["strides"]]
    for i, stride in enumerate(strides[:128]):
        terms = [f"Mul(Integer({i + k + 2}), {S})" for k in range(7)]
        if i < 32:
            terms[0] = f"Max({S}, Integer({i + 2}))"
        stride.clear()
        stride["as_expr"] = {"expr_str": "Add(" + ", ".join(terms) + ")", "hint": None}


def deeply_nested(program: bytes) -> bytes:
    return (b'{"torch_version": "' + torch_release().encode() + b'", "x": '
            + b"[" * 10**5 + b"]" * 10**5 + b"}")


def _both(*edits: Callable[[Tree], None]) -> Callable[[Tree], None]:
    def edit(tree: Tree) -> None:
        for each in edits:
            each(tree)
    return edit


def ranged(count: int) -> Callable[[Tree], None]:
    """Sizes s0 ... s<count - 1> with a range, as the hostile graphs that ran for minutes had."""
    def edit(tree: Tree) -> None:
        tree["range_constraints"].update(
            {f"s{i}": {"min_val": 2, "max_val": None} for i in range(count)})
    return edit


def _product_of_sums() -> str:
    terms = [f"Add(Symbol('s{2 * i}', integer=True), Symbol('s{2 * i + 1}', integer=True))"
             for i in range(10)]
    return "Mul(" + ", ".join(terms) + ")"


GELU_INPUT = arg("self", "as_tensor", {"name": "getitem"})
# the first batch norm's running mean and the copy it is given (its new running mean stays
# 8 long: the buffer it is written back to is not compared with it before it runs)
STATS = ("b_stem_1_running_mean", "clone_default")

HOSTILE = [
    # memory corruption in allowed ops
    Hostile("batch norm statistics of 1 for 8 channels",
            "running_mean is \\(1,\\), not \\[8\\]",
            tree=resize(*STATS), state=state_resized("stem.1.running_mean")),
    Hostile("batch norm weight of 1 for 8 channels", "weight is \\(1,\\), not \\[8\\]",
            tree=resize("p_stem_1_weight")),
    Hostile("max_pool2d_with_indices_backward with indices of -10^6",
            "max_pool2d_with_indices_backward.default' is not allowed \\(a backward op",
            tree=replace_gelu("max_pool2d_with_indices_backward.default", [
                arg("grad_output", "as_tensor", {"name": "getitem"}),
                arg("self", "as_tensor", {"name": "getitem"}),
                arg("kernel_size", "as_ints", [1, 1]), arg("stride", "as_ints", [1, 1]),
                arg("padding", "as_ints", [0, 0]), arg("dilation", "as_ints", [1, 1]),
                arg("ceil_mode", "as_bool", False),
                arg("indices", "as_tensor", {"name": "getitem"})])),
    Hostile("_fft_r2c over dimension 10^6 (declared as a float result)",
            "dimensions \\[1000000\\] are not distinct dimensions",
            tree=replace_gelu("_fft_r2c.default", [
                GELU_INPUT, arg("dim", "as_ints", [10**6]),
                arg("normalization", "as_int", 0), arg("onesided", "as_bool", True)])),
    Hostile("a node that makes another shape than it declares",
            "gelu makes .* the graph declares",
            tree=lambda t: graph_of(t)["tensor_values"]["gelu"]["sizes"].__setitem__(
                1, {"as_int": 4})),
    # exponential work while loading
    Hostile("Mul of 10 Adds of distinct symbols (585 characters)", "more than 8 operators",
            tree=_both(first_size(_product_of_sums()), ranged(20))),
    Hostile("the batch symbol multiplied 40 times", "Mul with more than 8 operands",
            tree=first_size("Mul(" + ", ".join([S] * 40) + ")")),
    Hostile("Max of 60 symbols", "Max with more than 8 operands",
            tree=_both(first_size("Max(" + ", ".join(
                f"Symbol('s{i}', integer=True)" for i in range(60)) + ")"), ranged(60))),
    Hostile("1,050 operators in shape expressions", "1050 operators, over the cap",
            tree=sym_ints([f"Add(Mul(Integer({i + 2}), {S}), Integer({i}))"
                           for i in range(525)])),
    Hostile("a size other than the batch", "a size other than the batch",
            tree=_both(first_size("Symbol('s5', positive=True, integer=True)"),
                       lambda t: t["range_constraints"].update(
                           s5={"min_val": 2, "max_val": None}))),
    Hostile("1,100 distinct expressions", "1101 distinct shape expressions, over the cap",
            tree=sym_ints([f"Add({S}, Integer({i}))" for i in range(1_100)])),
    Hostile("33 times Max", "Max, Min or FloorDiv 33 times",
            tree=sym_ints([f"Max({S}, Integer({i}))" for i in range(33)])),
    Hostile("the most shape arithmetic the caps allow", "not the one the hub announced",
            tree=costliest_strides, note="goes through torch's loader: only the fingerprint "
            "(the test's own, not the graph's) differs"),
    # unbounded allocation while loading
    Hostile("a trainable parameter of 2^31 float64 elements",
            "declares 2,147,48\\d,\\d{3} trainable values; the hub sends 5,266",
            tree=lambda t: graph_of(t)["tensor_values"]["p_stem_0_weight"].update(
                dtype=8, sizes=[{"as_int": 2**31}], strides=[{"as_int": 1}]),
            numel=5_266),
    Hostile("a manifest announcing 2^31 trainable values", "trainable_numel",
            tree=lambda t: graph_of(t)["tensor_values"]["p_stem_0_weight"].update(
                dtype=8, sizes=[{"as_int": 2**31}], strides=[{"as_int": 1}]),
            numel=2**31 + 5_266 - 216),
    Hostile("arange to a float end of 10^12", "arange.start_step asks for 1000000000000",
            tree=replace_gelu("arange.start_step", [
                arg("start", "as_int", 0), arg("end", "as_float", 1e12),
                arg("step", "as_int", 1)])),
    Hostile("arange from a negative start of -2^40", "arange.start_step asks for 109951162",
            tree=replace_gelu("arange.start_step", [
                arg("start", "as_int", -(2**40)), arg("end", "as_int", 1),
                arg("step", "as_int", 1)])),
    # crashes instead of refusals
    Hostile("JSON nested 10^5 deep", "nests too deeply", raw=deeply_nested),
    Hostile("a size that overflows torch's strides", "declares sizes \\[0, 4611686",
            tree=lambda t: graph_of(t)["tensor_values"]["p_stem_0_weight"].update(
                sizes=[{"as_int": 0}, {"as_int": 2**62}, {"as_int": 2**62}],
                strides=[{"as_int": 1}] * 3)),
    Hostile("a torch version with trailing text", "unreadable torch version",
            tree=lambda t: t.update(torch_version=torch_release() + "abc")),
]
BY_NAME = {case.name: case for case in HOSTILE}
