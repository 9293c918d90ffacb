"""The shape checks: a rebuilt graph run on fake tensors before anything of it runs for real.

torch's deserializer gives every node the shape and dtype the graph *declares*; nothing
makes the declarations true, and the CPU kernels of some allowed ops trust the shapes they
are given (``rules.py``). So, at each batch size of ``BATCHES``, every node runs on fake
tensors (shapes and dtypes, no memory, no data: torch's ``FakeTensorMode``, the very
kernels ``torch.export`` declared the shapes with) from the graph's input of that batch,
its parameters, buffers and constants, with the worker's rules asked first:

- an op's own (fake) checks refuse arguments that do not fit, a rule of ``rules.py`` those
  its kernel would not;
- what each node makes must be what the graph declares (shape and dtype), so the
  declarations the rest of the loader reads are the truth at those batch sizes;
- each tensor a node makes (views aside) is at most ``MAX_TENSOR_BYTES``, and all of
  them together at most ``MAX_FORWARD_BYTES``: what one forward can ask of memory.

A batch-dependent shape could still differ at the batch the worker trains with, so the
rules also run at every call while training: ``install_guards``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import sympy  # type: ignore[import-untyped]
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.export import ExportedProgram

from computeshare_desktop.graph import rules
from computeshare_desktop.graph.base import MIN_BATCH, GraphRefused

BATCHES = (MIN_BATCH, MIN_BATCH + 1)
MAX_TENSOR_BYTES = 2**31  # one tensor the forward makes, at a batch of BATCHES
MAX_FORWARD_BYTES = 2**34  # every tensor it makes, together


def check_shapes(program: ExportedProgram) -> None:
    """Run ``program``'s graph on fake tensors at each batch of ``BATCHES``.

    Raises:
        GraphRefused: an op refused its arguments, a rule would be broken, a node makes
            something other than it declares, or the forward needs too much memory.
    """
    batch = next(iter(program.range_constraints), None)
    for size in BATCHES:
        # a fake tensor never meets a real one, and a factory makes fakes: nothing allocates
        with FakeTensorMode(allow_non_fake_inputs=False):
            _Run(batch, size).run(program.graph_module.graph)


def install_guards(module: torch.fx.GraphModule) -> int:
    """Check each rule of ``rules.py`` at every call, on the real arguments, before its op
    runs; return how many calls are guarded."""
    graph, count = module.graph, 0
    for node in list(graph.nodes):
        if node.op == "call_function" and rules.rule_for(node.target) is not None:
            with graph.inserting_before(node):
                graph.call_function(rules.guard, (node.target, node.name, node.args,
                                                  node.kwargs))
            count += 1
    module.recompile()
    return count


def _flat(value: Any) -> Iterator[Any]:
    if isinstance(value, list | tuple):
        for item in value:
            yield from _flat(item)
    else:
        yield value


class _Run:
    """One run of the graph on fake tensors, at one batch size."""

    def __init__(self, batch: sympy.Symbol | None, size: int) -> None:
        self.batch, self.size = batch, size
        self.sizes: dict[sympy.Expr, int] = {}  # a declared size's expression -> its value
        self.env: dict[torch.fx.Node, Any] = {}
        self.total = 0

    def run(self, graph: torch.fx.Graph) -> None:
        for node in graph.nodes:
            if node.op == "placeholder":
                shape, dtype = self.declared(node.meta["val"])
                self.env[node] = torch.empty(shape, dtype=dtype)
            elif node.op == "call_function":
                self.env[node] = out = self.call(node)
                self.compare(node, out)
                self.count(node, out)

    def value(self, size: int | torch.SymInt) -> int:
        """A declared size at this batch."""
        if not isinstance(size, torch.SymInt):
            return int(size)
        expr = size.node.expr
        if expr not in self.sizes:
            value = expr.xreplace({self.batch: sympy.Integer(self.size)}) \
                if self.batch is not None else expr
            if not isinstance(value, sympy.Integer):
                raise GraphRefused(f"the declared size {expr} is not a number at a batch "
                                   f"of {self.size}")
            self.sizes[expr] = int(value)
        return self.sizes[expr]

    def declared(self, meta: torch.Tensor) -> tuple[list[int], torch.dtype]:
        return [self.value(d) for d in meta.shape], meta.dtype

    def call(self, node: torch.fx.Node) -> Any:
        target = node.target
        args = torch.fx.node.map_arg(node.args, self.env.__getitem__)
        kwargs = torch.fx.node.map_arg(node.kwargs, self.env.__getitem__)
        if isinstance(target, torch._ops.OpOverload):
            why = rules.problem(target, args, kwargs)
            if why is not None:
                raise GraphRefused(f"{target} at {node.name} would read or write past its "
                                   f"arguments: {why}", where=node.name)
        try:
            out = target(*args, **kwargs)  # type: ignore[operator]
        except Exception as err:  # the op's own checks, whichever it raises
            first = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
            raise GraphRefused(f"{target} at {node.name} refuses its arguments at a batch "
                               f"of {self.size}: {first}", where=node.name) from None
        if any(isinstance(t, torch.Tensor) and not isinstance(t, FakeTensor)
               for t in _flat(out)):
            raise GraphRefused(f"{target} at {node.name} makes a real tensor", where=node.name)
        return out

    def compare(self, node: torch.fx.Node, out: Any) -> None:
        """What ``node`` made against what the graph declares for it."""
        made, declared = list(_flat(out)), list(_flat(node.meta.get("val")))
        if len(made) != len(declared):
            raise GraphRefused(f"{node.name} makes {len(made)} values, the graph declares "
                               f"{len(declared)}", where=node.name)
        for value, meta in zip(made, declared, strict=True):
            got: object = value
            want: object
            if isinstance(meta, torch.Tensor):
                if isinstance(value, torch.Tensor):
                    got = (list(value.shape), value.dtype)
                want = self.declared(meta)
            elif isinstance(meta, int | torch.SymInt):
                want = self.value(meta)
            else:
                continue
            if got != want:
                raise GraphRefused(f"{node.name} makes {got} at a batch of {self.size}, "
                                   f"the graph declares {want}", where=node.name)

    def count(self, node: torch.fx.Node, out: Any) -> None:
        """The memory of what ``node`` made, if it is new memory (not a view)."""
        target = node.target
        if not isinstance(target, torch._ops.OpOverload):
            return  # getitem of an op's results, integer arithmetic
        returns = target._schema.returns
        for i, value in enumerate(_flat(out)):
            aliased = i < len(returns) and returns[i].alias_info is not None
            if not isinstance(value, torch.Tensor) or aliased:
                continue
            nbytes = value.numel() * value.element_size()
            self.total += nbytes
            if nbytes > MAX_TENSOR_BYTES or self.total > MAX_FORWARD_BYTES:
                raise GraphRefused(f"{node.name} makes {nbytes:,} bytes at a batch of "
                                   f"{self.size} ({self.total:,} so far): over the caps of "
                                   f"{MAX_TENSOR_BYTES:,} per tensor and {MAX_FORWARD_BYTES:,}"
                                   f" per forward", where=node.name)
