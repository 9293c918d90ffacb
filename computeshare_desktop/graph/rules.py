"""The worker's own rules for the allowed ops whose CPU kernels trust their arguments.

Most ATen kernels check that their arguments agree; these do not, and neither do their
meta kernels (so a shape propagation alone passes them). Found by running every allowed op
with each argument shrunk or pushed out of range, every tensor touching a guard page, in a
child process under glibc's malloc checker (torch 2.14.1, CPU):

- batch norm (the four ``_native_batch_norm_legit*``): weight, bias or running statistics
  shorter than the input's channels are read, and the statistics written, past their end
  (a segfault, ``free(): invalid pointer``, or the worker's memory in the output);
- ``_fft_r2c`` / ``_fft_c2r``: a dimension out of range (10^6) is used unwrapped (segfault).

The ``*_backward`` ops had the same faults (indices of ``max_pool2d_with_indices_backward``,
``native_layer_norm_backward``'s statistics, the pools' gradients); a forward graph never
holds one, so ``ops.py`` refuses them all. Group norm, layer norm and the grid sampler
checked what was tried; they are here anyway, as the issue of a hostile hub asked for group
norm, because what they read is sized by ints the graph chooses.

``problem`` is asked before anything runs, on the meta tensors of the shape checks
(``shapes.py``), and again at every call while training (``guard``), on the real tensors,
so a shape that depends on the batch in some way the checks did not try is still caught.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from computeshare_desktop.graph.base import GraphRefused

Rule = Callable[[dict[str, Any]], "str | None"]


def _vector(value: object, size: int, what: str) -> str | None:
    """None when ``value`` is None or a tensor of shape ``[size]``, else why not."""
    if value is None or (isinstance(value, torch.Tensor) and tuple(value.shape) == (size,)):
        return None
    shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
    return f"its {what} is {shape}, not [{size}]"


def _batch_norm(args: dict[str, Any]) -> str | None:
    x = args["input"]
    if x.dim() < 2:
        return f"its input has {x.dim()} dimension(s), not at least 2"
    channels = x.shape[1]
    for name in ("weight", "bias", "running_mean", "running_var"):
        problem = _vector(args.get(name), channels, name)
        if problem:
            return f"{problem} for an input of {channels} channels"
    return None


def _group_norm(args: dict[str, Any]) -> str | None:
    x, n, c, hxw, group = (args[k] for k in ("input", "N", "C", "HxW", "group"))
    if x.dim() < 2 or (n, c, hxw) != (x.shape[0], x.shape[1], math.prod(x.shape[2:])):
        return f"N, C, HxW = {n}, {c}, {hxw} do not describe an input of {tuple(x.shape)}"
    if group < 1 or c % group:
        return f"{c} channels do not split into {group} groups"
    return _vector(args.get("weight"), c, "weight") or _vector(args.get("bias"), c, "bias")


def _layer_norm(args: dict[str, Any]) -> str | None:
    x, shape = args["input"], list(args["normalized_shape"])
    if not shape or len(shape) > x.dim() or list(x.shape[x.dim() - len(shape):]) != shape:
        return f"normalized shape {shape} is not the end of an input of {tuple(x.shape)}"
    for name in ("weight", "bias"):
        value = args.get(name)
        if value is not None and list(value.shape) != shape:
            return f"its {name} is {tuple(value.shape)}, not {shape}"
    return None


def _fft(args: dict[str, Any]) -> str | None:
    ndim, dims = args["self"].dim(), list(args["dim"])
    if len(set(dims)) != len(dims) or any(not -ndim <= d < ndim for d in dims):
        return f"dimensions {dims} are not distinct dimensions of a {ndim}-d input"
    if "last_dim_size" in args and args["last_dim_size"] < 1:
        return f"last_dim_size {args['last_dim_size']} is not a size"
    return None


def _grid_sampler(args: dict[str, Any]) -> str | None:
    x, grid = args["input"], args["grid"]
    if args["interpolation_mode"] not in (0, 1, 2) or args["padding_mode"] not in (0, 1, 2):
        return "an interpolation or padding mode it does not have"
    if x.dim() != 4 or grid.dim() != 4 or grid.shape[0] != x.shape[0] or grid.shape[3] != 2:
        return f"a grid of {tuple(grid.shape)} for an input of {tuple(x.shape)}"
    return None


RULES: dict[str, Rule] = {
    "_native_batch_norm_legit.default": _batch_norm,
    "_native_batch_norm_legit.no_stats": _batch_norm,
    "_native_batch_norm_legit_functional.default": _batch_norm,
    "_native_batch_norm_legit_no_training.default": _batch_norm,
    "native_group_norm.default": _group_norm,
    "native_layer_norm.default": _layer_norm,
    "_fft_r2c.default": _fft,
    "_fft_c2r.default": _fft,
    "grid_sampler_2d.default": _grid_sampler,
}


def rule_for(op: object) -> Rule | None:
    """The rule of an ATen op overload (``aten.native_group_norm.default``), if it has one."""
    if not isinstance(op, torch._ops.OpOverload):
        return None
    return RULES.get(str(op).removeprefix("aten."))


def bound_arguments(op: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``args`` and ``kwargs`` of a call to ``op`` by its schema's argument names."""
    names = [a.name for a in op._schema.arguments]
    return {**dict(zip(names, args, strict=False)), **kwargs}


def problem(op: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> str | None:
    """Why a call of ``op`` would read or write past its arguments, or None."""
    rule = rule_for(op)
    return None if rule is None else rule(bound_arguments(op, args, kwargs))


def guard(op: Any, where: str, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """The rule of ``op``, checked on the real arguments just before the op runs.

    Raises:
        GraphRefused: the arguments break the rule; the op did not run.
    """
    why = problem(op, args, kwargs)
    if why is not None:
        raise GraphRefused(f"{op} at {where} would read or write past its arguments: {why}",
                           where=where)
