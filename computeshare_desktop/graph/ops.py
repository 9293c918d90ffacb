"""The explicit allow-list of what a graph's nodes may call.

torch's deserializer resolves a node's ``target`` by attribute path from ``torch``,
``_operator`` or ``math``, so a node could name ``torch.load`` or ``torch.hub.load``: this
list, checked on the JSON's strings before deserializing, is the only barrier. Exact string
membership also means a target resolves to the genuine op, never to something reached
through a longer path.

How the list was made (torch 2.14.1): the hub exports in train mode and runs
``run_decompositions()``, which lowers everything to the core ATen opset. ``CORE_ATEN`` is
every ``torch.ops.aten`` overload tagged ``torch.Tag.core`` (193 of them), less
``EXCLUDED`` below; ``tests/graph/test_ops.py`` recomputes the tag set and fails when a torch
upgrade changes it, so the list is reviewed rather than followed blindly. The few non-core
ops a decomposed train-mode program needs are ``EXTRA_ATEN``, each with its reason; the ops
that return uninitialised memory are allowed only where an op that overwrites every element
consumes them (``checks.py``), or a hostile hub could read the worker's freed memory back
in a gradient. No prims are allowed: core ATen programs have none.
"""

from __future__ import annotations

from computeshare_desktop.graph.base import GraphRefused

_CORE = """
    _adaptive_avg_pool2d.default
    _adaptive_avg_pool3d.default _cdist_forward.default _embedding_bag.default
    _fft_c2r.default _fft_r2c.default _log_softmax.default _native_batch_norm_legit.default
    _native_batch_norm_legit.no_stats _native_batch_norm_legit_no_training.default
    _pdist_forward.default _softmax.default _to_copy.default abs.default acos.default
    acosh.default adaptive_avg_pool1d.default add.Scalar add.Tensor addmm.default
    alias.default amax.default amin.default any.default any.dim any.dims arange.start_step
    argmax.default argmin.default as_strided.default asin.default asinh.default atan.default
    atan2.default atanh.default avg_pool1d.default avg_pool2d.default
    avg_pool3d.default bitwise_and.Scalar bitwise_and.Tensor
    bitwise_not.default bitwise_or.Scalar bitwise_or.Tensor bitwise_xor.Scalar
    bitwise_xor.Tensor bmm.default cat.default ceil.default clamp.default clamp.Tensor
    clone.default col2im.default constant_pad_nd.default convolution.default
    copy.default cos.default cosh.default cumsum.default
    diagonal.default div.Scalar div.Scalar_mode div.Tensor div.Tensor_mode elu.default
    embedding.default
    eq.Scalar eq.Tensor erf.default exp.default expand.default
    expm1.default fill.Scalar flip.default floor.default fmod.Scalar fmod.Tensor
    full.default full_like.default gather.default ge.Scalar ge.Tensor gelu.default
    grid_sampler_2d.default gt.Scalar gt.Tensor hardtanh.default index.Tensor
    index_put.default index_select.default isinf.default isnan.default le.Scalar le.Tensor
    leaky_relu.default log.default log10.default log1p.default log2.default
    logical_and.default logical_not.default logical_or.default logical_xor.default lt.Scalar
    lt.Tensor masked_scatter.default max.dim max_pool2d_with_indices.default
    max_pool3d_with_indices.default maximum.default
    mean.default mean.dim min.dim minimum.default mm.default mul.Scalar mul.Tensor
    native_dropout.default native_group_norm.default
    native_layer_norm.default ne.Scalar ne.Tensor
    neg.default permute.default pow.Scalar pow.Tensor_Scalar pow.Tensor_Tensor prod.default
    prod.dim_int rand.default randn.default randperm.default reciprocal.default
    reflection_pad1d.default reflection_pad2d.default reflection_pad3d.default relu.default
    remainder.Scalar remainder.Tensor repeat.default replication_pad2d.default
    replication_pad3d.default round.default rsqrt.default scalar_tensor.default scatter.src
    scatter.value scatter_add.default scatter_reduce.two select.int select_scatter.default
    sigmoid.default sign.default sin.default sinh.default slice.Tensor slice_scatter.default
    sort.default split_with_sizes.default sqrt.default squeeze.dim squeeze.dims sub.Scalar
    sub.Tensor sum.dim_IntList sym_numel.default sym_size.int sym_storage_offset.default
    sym_stride.int tan.default tanh.default topk.default trunc.default unsqueeze.default
    upsample_bilinear2d.vec upsample_nearest2d.vec var.correction var.dim view.default
    where.self
"""
CORE_ATEN = frozenset(_CORE.split())

# Core ops left out, and why.
EXCLUDED = {
    "resize_.default": "resizes a tensor in place (grows storage with uninitialised memory)",
    "atan2.out": "an out= variant writes into a tensor it is given",
    "_local_scalar_dense.default": "data-dependent sizes (unbacked symbols)",
    "nonzero.default": "data-dependent sizes (unbacked symbols)",
    "sym_is_contiguous.default": "a symbolic bool (none are accepted)",
}
# The backward ops: a forward training graph never holds one (autograd makes the backward
# when it trains), and their CPU kernels trust their arguments (graph/rules.py): indices of
# -10^6 made max_pool2d_with_indices_backward segfault, short statistics
# native_layer_norm_backward, a short input the pools' gradients.
EXCLUDED.update(dict.fromkeys((
    "_adaptive_avg_pool2d_backward.default", "avg_pool2d_backward.default",
    "convolution_backward.default", "embedding_dense_backward.default",
    "max_pool2d_with_indices_backward.default", "native_group_norm_backward.default",
    "native_layer_norm_backward.default"),
    "a backward op, which a forward graph never holds (its CPU kernel trusts its arguments)"))

# Non-core ops that decomposed train-mode programs emit, each with its reason.
EXTRA_ATEN = {
    "_native_batch_norm_legit_functional.default":
        "BatchNorm in training, functionalized (returns the new running statistics)",
    "bernoulli.p": "Dropout(inplace=True) and stochastic depth draw their mask with it",
    "detach.default": "x.detach() and a torch.no_grad() block's outputs (graph/tracing.py): "
                      "a view of its one tensor that takes no gradient; no other argument",
    # Kept as kernels, not decomposed (graph/tracing.KERNELS): each is elementwise over its
    # one tensor into a new one of its size, with no other argument.
    "silu.default": "nn.SiLU (EfficientNet, RegNetY's blocks); its decomposition differs "
                    "in the last bits",
    "hardswish.default": "nn.Hardswish (MobileNetV3)",
    "hardsigmoid.default": "nn.Hardsigmoid (MobileNetV3's squeeze-excitation)",
}

# Ops whose output is uninitialised memory (two of them core, taken out of CORE_ATEN), and
# the ops (and argument) allowed to consume it, each of which overwrites every element
# without reading any.
UNINITIALISED = frozenset({"empty.memory_format", "empty_strided.default",
                           "empty_permuted.default"})
OVERWRITERS = {"bernoulli.p": "self", "fill.Scalar": "self"}

# Ops that allocate as many elements as one argument says (whatever the graph declares for
# their result), and that argument: checks.py caps it.
ALLOCATING = {"full.default": "size", "empty.memory_format": "size",
              "empty_strided.default": "size", "empty_permuted.default": "size",
              "rand.default": "size", "randn.default": "size", "expand.default": "size",
              "repeat.default": "repeats", "arange.start_step": "end", "randperm.default": "n"}

# The integer arithmetic of dynamic shapes (what the shape grammar can express) and the
# unpacking of a multi-output op.
SYMBOLIC = frozenset({"_operator.add", "_operator.sub", "_operator.mul", "_operator.floordiv",
                      "_operator.neg", "torch.sym_max", "torch.sym_min"})
GETITEM = "_operator.getitem"

ATEN_PREFIX = "torch.ops.aten."
ALLOWED = frozenset(
    {ATEN_PREFIX + op for op in CORE_ATEN | EXTRA_ATEN.keys() | UNINITIALISED}
    | SYMBOLIC | {GETITEM})


def check_target(target: str, where: str | None = None) -> None:
    """Refuse a node target that is not on the allow-list, naming it (``where``: the node).

    Raises:
        GraphRefused: the target is not allowed (its text is quoted, shortened).
    """
    if target not in ALLOWED:
        shown = target[:80] + ("..." if len(target) > 80 else "")
        why = EXCLUDED.get(target.removeprefix(ATEN_PREFIX)) \
            if target.startswith(ATEN_PREFIX) else None
        raise GraphRefused(f"operation {shown!r} is not allowed"
                           + (f" ({why})" if why else ""), where=where)


def is_uninitialised(target: str) -> bool:
    return target.removeprefix(ATEN_PREFIX) in UNINITIALISED


def overwritten_argument(target: str) -> str | None:
    """The argument of ``target`` that may take uninitialised memory, if any."""
    return OVERWRITERS.get(target.removeprefix(ATEN_PREFIX))


def size_argument(target: str) -> str | None:
    """The argument of ``target`` that says how many elements it allocates, if any."""
    return ALLOCATING.get(target.removeprefix(ATEN_PREFIX))
