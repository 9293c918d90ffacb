"""What torch.export loses of a training forward: put back before the graph ships, or
refused with the layer named.

Found by the model zoo (tests/graph/test_model_zoo*.py), each a graph that trained
differently from its module without any error (torch 2.14.1):

- ``x.detach()`` and ``torch.no_grad()`` blocks: ``run_decompositions`` turns ``detach``
  into ``alias`` and inlines a no-grad region, so gradients flow where the model stops
  them (a straight-through estimator, a running mean updated in forward). Kept: the
  decomposition table keeps ``detach``, and a no-grad region's outputs are detached.
- The dropout between the layers of a stacked ``nn.LSTM``/``nn.GRU``/``nn.RNN``:
  torch's decomposition (``torch._decomp.decompositions._rnn_helper``) tests
  ``num_layers < i - 1``, never true, so the graph has none. Put back while exporting.
- ``torch.autograd.Function``: export traces its forward and drops its backward, so the
  graph would train with the forward's gradient. Refused, naming the layer.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any

import torch
from torch import nn

from computeshare_desktop.errors import ConfigError

_DETACH = torch.ops.aten.detach.default
# Activations kept as torch's own kernels rather than their decompositions
# (x * sigmoid(x) ...), which differ from the kernel in the last bits: BatchNorm over a
# few values per channel (a small batch at a 1×1 map, as EfficientNet's last stages at
# 32 px) amplifies that until the worker's step is not the module's.
KERNELS = (torch.ops.aten.silu.default, torch.ops.aten.silu_.default,
           torch.ops.aten.hardswish.default, torch.ops.aten.hardswish_.default,
           torch.ops.aten.hardsigmoid.default, torch.ops.aten.hardsigmoid_.default)
FUNCTION_ADVICE = (
    "write the backward as tensor operations instead (a straight-through estimator is "
    "x + (f(x) - x).detach()), or give up the custom gradient")


def decompositions() -> Any:
    """torch's default table for ``run_decompositions``, less ``detach``'s (which would
    become ``alias``, through which gradients flow) and ``KERNELS``'."""
    table = torch.export.default_decompositions()
    for op in (_DETACH, *KERNELS):
        table.pop(op, None)
    return table


def detach_no_grad_outputs(program: torch.export.ExportedProgram) -> None:
    """Detach every output of a ``torch.no_grad()`` region (before ``run_decompositions``
    inlines it): what it computes then takes no gradient, as in the module."""
    graph = program.graph_module.graph
    regions = [n for n in graph.nodes if n.op == "call_function"
               and n.target is torch.ops.higher_order.wrap_with_set_grad_enabled
               and n.args[0] is False]
    for region in regions:
        for item in list(region.users):
            if not isinstance(item.meta.get("val"), torch.Tensor):
                continue
            with graph.inserting_after(item):
                detached = graph.call_function(_DETACH, (item,))
            detached.meta = {**item.meta}
            item.replace_all_uses_with(detached, delete_user_cb=_other_than(detached))
    program.graph_module.recompile()


def _other_than(node: torch.fx.Node) -> Callable[[torch.fx.Node], bool]:
    return lambda user: user is not node


def _rnn_helper(input: Any, hidden: Any, params: Any, has_biases: bool, num_layers: int,
                dropout: float, train: bool, bidirectional: bool, batch_first: bool,
                layer_fn: Callable[..., Any]) -> Any:
    """torch's ``_rnn_helper`` (torch/_decomp/decompositions.py) with its dropout between
    layers applied, as the eager kernel applies it (after each layer but the last)."""
    from torch._decomp.decompositions import params_hiddens

    input = input.transpose(0, 1) if batch_first else input
    final_hiddens = []
    for i in range(num_layers):
        cur_params, cur_hidden, bidir_params, bidir_hidden = params_hiddens(
            params, hidden, i, bidirectional)
        fwd_inp, fwd_hidden = layer_fn(input, cur_hidden, cur_params, has_biases)
        final_hiddens.append(fwd_hidden)
        if bidirectional:
            bwd_inp, bwd_hidden = layer_fn(input, bidir_hidden, bidir_params, has_biases,
                                           reverse=True)
            final_hiddens.append(bwd_hidden)
            input = torch.cat([fwd_inp, bwd_inp], fwd_inp.dim() - 1)
        else:
            input = fwd_inp
        if dropout != 0 and train and i < num_layers - 1:
            input = torch.dropout(input, dropout, train=True)
    input = input.transpose(0, 1) if batch_first else input
    return input, final_hiddens


@contextmanager
def rnn_dropout_kept() -> Iterator[None]:
    """While exporting: torch's RNN decompositions call our ``_rnn_helper`` (they look
    it up by name in their module at each call). A torch whose helper has another
    signature is left alone."""
    from torch._decomp import decompositions as module

    theirs = getattr(module, "_rnn_helper", None)
    if theirs is None or list(inspect.signature(theirs).parameters) \
            != list(inspect.signature(_rnn_helper).parameters):
        yield
        return
    module._rnn_helper = _rnn_helper
    try:
        yield
    finally:
        module._rnn_helper = theirs


def layer_label(path: str, kind: str) -> str:
    """How a refusal names a module: ``layer rnn: nn.LSTM``; the root, which is no layer,
    as ``Net's own forward``."""
    return f"layer {path}: {kind}" if path else f"{kind}'s own forward"


def layer_text(module: nn.Module, path: str) -> str:
    """``layer rnn: nn.LSTM``, ``layer gate: Gate``, ``Net's own forward``."""
    kind = type(module)
    name = kind.__qualname__
    return layer_label(path, f"nn.{name}" if kind.__module__.startswith("torch.nn.") else name)


def innermost_layer(frames: Iterator[FrameType], model: nn.Module) -> str | None:
    """The innermost of ``model``'s modules running in ``frames`` (outermost first), as
    ``layer_text`` writes it; None when none is."""
    paths = {id(m): name for name, m in model.named_modules(remove_duplicate=False)}
    found = None
    for frame in frames:
        owner = frame.f_locals.get("self")
        if isinstance(owner, nn.Module) and id(owner) in paths:
            found = layer_text(owner, paths[id(owner)])
    return found


def traceback_frames(err: BaseException) -> Iterator[FrameType]:
    """The frames ``err`` (and what caused it) passed through, outermost first."""
    seen: set[int] = set()
    chain: list[BaseException] = []
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        chain.append(err)
        err = err.__cause__ or err.__context__  # type: ignore[assignment]
    for link in reversed(chain):  # the root cause's frames are the deepest
        tb: TracebackType | None = link.__traceback__
        while tb is not None:
            yield tb.tb_frame
            tb = tb.tb_next


def stack_frames() -> Iterator[FrameType]:
    """The calling thread's frames, outermost first."""
    frames = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return reversed(frames)


@contextmanager
def custom_functions_refused(model: nn.Module) -> Iterator[None]:
    """While exporting ``model`` in this thread: a ``torch.autograd.Function`` it applies
    is a ConfigError naming the layer (the graph would lose its backward). Other
    threads' calls pass untouched."""
    function = torch.autograd.Function
    original = function.__dict__["apply"]
    exporter = threading.get_ident()
    used: list[tuple[str, str | None]] = []

    def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == exporter:
            used.append((cls.__qualname__, innermost_layer(stack_frames(), model)))
        return original.__get__(None, cls)(*args, **kwargs)

    function.apply = classmethod(apply)
    try:
        yield
    finally:
        function.apply = original
    if used:
        name, layer = used[0]
        where = f"{layer}: " if layer else ""
        raise ConfigError(
            f"the model cannot be exported as a graph for workers: {where}it applies "
            f"torch.autograd.Function {name}, whose own backward a graph cannot carry "
            f"(workers would train with its forward's gradient instead)\n"
            f"  hint: {FUNCTION_ADVICE}")


def data_dependent(program: torch.export.ExportedProgram) -> torch.fx.Node | None:
    """The first node whose result's size depends on the data (an unbacked symbol:
    boolean-mask indexing, ``nonzero``, ``.item()``), which workers refuse."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    for node in program.graph.nodes:
        value = node.meta.get("val")
        if node.op == "call_function" and value is not None and free_unbacked_symbols(value):
            return node
    return None


def data_dependent_text(node: torch.fx.Node) -> str:
    """Why a graph with ``node`` (``data_dependent``) is refused, and what to write."""
    return (f"{node.target} makes a tensor whose size depends on the data (as boolean-mask "
            f"indexing, nonzero, masked_select, unique or .item() do), and workers accept "
            f"only sizes that follow from the input's; compute on the whole tensor "
            f"instead: torch.where(mask, x, 0), or (x * mask).sum() / mask.sum()")
