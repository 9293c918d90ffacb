"""Probe which allowed ops' eager CPU kernels do not validate their arguments.

Each base call is mutated (a tensor argument shrunk, an index tensor pushed out of range,
an int pushed to extremes); each mutated call runs in a forked child with every tensor
argument in 'fenced' memory (a PROT_NONE page right after it, or right before it), under
glibc's malloc checker: a crash means the kernel read or wrote out of bounds.

Rerun it when torch is upgraded (it takes a few minutes on 2 cores)::

    GLIBC_TUNABLES=glibc.malloc.check=3 python -m scripts.probe_kernels [OP ...] 2>&1 | grep CRASH

Every op a CRASH line names must have a rule in ``graph/rules.py`` (or be off the allow-list
in ``graph/ops.py``); a SIGNAL14 is the 10 s alarm, a call that ran too long, which the
graph's size caps (``graph/shapes.py``) bound instead. Results: ``$PROBE_OUT``
(``build/probe_kernels.json``). Found with torch 2.14.1: the four batch-norm kernels, the two
FFTs, and the backward ops (now refused).
"""

import ctypes
import mmap
import os
import sys
import json
import signal
import math
import torch
from pathlib import Path

from computeshare_desktop.graph import ops

torch.set_num_threads(1)
OUT = os.environ.get("PROBE_OUT", "build/probe_kernels.json")

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
PAGE = mmap.PAGESIZE


def fenced(t, before):
    """A copy of t whose bytes touch a PROT_NONE page (after them, or before them)."""
    t = t.contiguous()
    n = t.numel() * t.element_size()
    pages = max(1, -(-n // PAGE))
    size = (pages + 1) * PAGE
    addr = libc.mmap(None, size, 3, 0x22, -1, 0)
    if before:
        libc.mprotect(addr, PAGE, 0)
        start = addr + PAGE
    else:
        libc.mprotect(addr + pages * PAGE, PAGE, 0)
        start = addr + pages * PAGE - n
    if n == 0:
        return t.clone()
    buf = (ctypes.c_char * n).from_address(start)
    out = torch.frombuffer(buf, dtype=torch.uint8).view(t.dtype).view(t.shape)
    out.copy_(t)
    return out


def T(*shape, dtype=torch.float32):
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        return torch.rand(shape, dtype=dtype) + 0.5
    return torch.randint(0, 2, shape, dtype=dtype)


L = torch.long
f = torch.float32
BASE = {
    "_adaptive_avg_pool2d.default": lambda: ([T(2, 3, 6, 6), [2, 2]], {}),
    "_adaptive_avg_pool2d_backward.default": lambda: ([T(2, 3, 2, 2), T(2, 3, 6, 6)], {}),
    "_adaptive_avg_pool3d.default": lambda: ([T(2, 3, 4, 4, 4), [2, 2, 2]], {}),
    "_cdist_forward.default": lambda: ([T(2, 4, 3), T(2, 5, 3), 2.0, None], {}),
    "_embedding_bag.default": lambda: (
        [T(10, 3), torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 3])],
        {},
    ),
    "_fft_c2r.default": lambda: ([torch.randn(2, 5, dtype=torch.complex64), [1], 0, 8], {}),
    "_fft_r2c.default": lambda: ([T(2, 8), [1], 0, True], {}),
    "_log_softmax.default": lambda: ([T(2, 5), 1, False], {}),
    "_native_batch_norm_legit.default": lambda: (
        [T(2, 4, 3, 3), T(4), T(4), T(4), T(4), True, 0.1, 1e-5],
        {},
    ),
    "_native_batch_norm_legit.no_stats": lambda: ([T(2, 4, 3, 3), T(4), T(4), True, 0.1, 1e-5], {}),
    "_native_batch_norm_legit_functional.default": lambda: (
        [T(2, 4, 3, 3), T(4), T(4), T(4), T(4), True, 0.1, 1e-5],
        {},
    ),
    "_native_batch_norm_legit_no_training.default": lambda: (
        [T(2, 4, 3, 3), T(4), T(4), T(4), T(4), 0.1, 1e-5],
        {},
    ),
    "_pdist_forward.default": lambda: ([T(5, 3), 2.0], {}),
    "_softmax.default": lambda: ([T(2, 5), 1, False], {}),
    "_to_copy.default": lambda: ([T(2, 5)], {"dtype": torch.float64}),
    "adaptive_avg_pool1d.default": lambda: ([T(2, 3, 8), [4]], {}),
    "addmm.default": lambda: ([T(5), T(3, 4), T(4, 5)], {}),
    "amax.default": lambda: ([T(3, 4), [1]], {}),
    "amin.default": lambda: ([T(3, 4), [1]], {}),
    "any.dim": lambda: ([T(3, 4, dtype=torch.bool), 1], {}),
    "any.dims": lambda: ([T(3, 4, dtype=torch.bool), [1]], {}),
    "arange.start_step": lambda: ([0, 10, 1], {}),
    "argmax.default": lambda: ([T(3, 4), 1], {}),
    "argmin.default": lambda: ([T(3, 4), 1], {}),
    "as_strided.default": lambda: ([T(4, 4), [2, 2], [4, 1], 1], {}),
    "avg_pool1d.default": lambda: ([T(2, 3, 8), [2], [2], [0]], {}),
    "avg_pool2d.default": lambda: ([T(2, 3, 6, 6), [2, 2], [2, 2], [0, 0], False, True, None], {}),
    "avg_pool2d_backward.default": lambda: (
        [T(2, 3, 3, 3), T(2, 3, 6, 6), [2, 2], [2, 2], [0, 0], False, True, None],
        {},
    ),
    "avg_pool3d.default": lambda: ([T(2, 3, 4, 4, 4), [2, 2, 2], [2, 2, 2], [0, 0, 0]], {}),
    "bernoulli.p": lambda: ([T(3, 4), 0.5], {}),
    "bmm.default": lambda: ([T(2, 3, 4), T(2, 4, 5)], {}),
    "cat.default": lambda: ([[T(2, 3), T(4, 3)], 0], {}),
    "clamp.Tensor": lambda: ([T(3, 4), T(3, 4), T(3, 4)], {}),
    "clamp.default": lambda: ([T(3, 4), 0.1, 0.9], {}),
    "col2im.default": lambda: ([T(2, 12, 9), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1]], {}),
    "constant_pad_nd.default": lambda: ([T(2, 3, 4), [1, 1], 0.0], {}),
    "convolution.default": lambda: (
        [T(2, 4, 6, 6), T(6, 2, 3, 3), T(6), [1, 1], [1, 1], [1, 1], False, [0, 0], 2],
        {},
    ),
    "convolution_backward.default": lambda: (
        [
            T(2, 6, 6, 6),
            T(2, 4, 6, 6),
            T(6, 2, 3, 3),
            [6],
            [1, 1],
            [1, 1],
            [1, 1],
            False,
            [0, 0],
            2,
            [True, True, True],
        ],
        {},
    ),
    "copy.default": lambda: ([T(3, 4), T(3, 4)], {}),
    "cumsum.default": lambda: ([T(3, 4), 1], {}),
    "diagonal.default": lambda: ([T(3, 4), 0, 0, 1], {}),
    "elu.default": lambda: ([T(3, 4)], {}),
    "embedding.default": lambda: ([T(10, 3), torch.tensor([[1, 2], [4, 9]])], {}),
    "embedding_dense_backward.default": lambda: (
        [T(2, 2, 3), torch.tensor([[1, 2], [4, 9]]), 10, -1, False],
        {},
    ),
    "empty.memory_format": lambda: ([[3, 4]], {}),
    "empty_permuted.default": lambda: ([[3, 4], [1, 0]], {}),
    "empty_strided.default": lambda: ([[3, 4], [4, 1]], {}),
    "expand.default": lambda: ([T(3, 1), [3, 4]], {}),
    "fill.Scalar": lambda: ([T(3, 4), 1.0], {}),
    "flip.default": lambda: ([T(3, 4), [1]], {}),
    "full.default": lambda: ([[3, 4], 1.0], {}),
    "full_like.default": lambda: ([T(3, 4), 1.0], {}),
    "gather.default": lambda: ([T(3, 4), 1, torch.tensor([[0, 1], [2, 3], [1, 1]])], {}),
    "gelu.default": lambda: ([T(3, 4)], {}),
    "grid_sampler_2d.default": lambda: (
        [T(2, 3, 5, 5), torch.rand(2, 4, 4, 2) * 2 - 1, 0, 0, False],
        {},
    ),
    "hardtanh.default": lambda: ([T(3, 4)], {}),
    "index.Tensor": lambda: ([T(5, 4), [torch.tensor([0, 4, 2])]], {}),
    "index_put.default": lambda: ([T(5, 4), [torch.tensor([0, 4, 2])], T(3, 4)], {}),
    "index_select.default": lambda: ([T(5, 4), 0, torch.tensor([0, 4, 2])], {}),
    "leaky_relu.default": lambda: ([T(3, 4), 0.1], {}),
    "masked_scatter.default": lambda: ([T(3, 4), T(3, 4, dtype=torch.bool), T(12)], {}),
    "max.dim": lambda: ([T(3, 4), 1], {}),
    "max_pool2d_with_indices.default": lambda: (
        [T(2, 3, 6, 6), [2, 2], [2, 2], [0, 0], [1, 1], False],
        {},
    ),
    "max_pool2d_with_indices_backward.default": lambda: (
        [
            T(2, 3, 3, 3),
            T(2, 3, 6, 6),
            [2, 2],
            [2, 2],
            [0, 0],
            [1, 1],
            False,
            torch.randint(0, 36, (2, 3, 3, 3)),
        ],
        {},
    ),
    "max_pool3d_with_indices.default": lambda: (
        [T(2, 3, 4, 4, 4), [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False],
        {},
    ),
    "mean.default": lambda: ([T(3, 4)], {}),
    "mean.dim": lambda: ([T(3, 4), [1]], {}),
    "min.dim": lambda: ([T(3, 4), 1], {}),
    "mm.default": lambda: ([T(3, 4), T(4, 5)], {}),
    "native_dropout.default": lambda: ([T(3, 4), 0.5, True], {}),
    "native_group_norm.default": lambda: ([T(2, 4, 3, 3), T(4), T(4), 2, 4, 9, 2, 1e-5], {}),
    "native_group_norm_backward.default": lambda: (
        [T(2, 4, 3, 3), T(2, 4, 3, 3), T(2, 2), T(2, 2), T(4), 2, 4, 9, 2, [True, True, True]],
        {},
    ),
    "native_layer_norm.default": lambda: ([T(2, 3, 4), [4], T(4), T(4), 1e-5], {}),
    "native_layer_norm_backward.default": lambda: (
        [T(2, 3, 4), T(2, 3, 4), [4], T(2, 3, 1), T(2, 3, 1), T(4), T(4), [True, True, True]],
        {},
    ),
    "permute.default": lambda: ([T(2, 3, 4), [2, 0, 1]], {}),
    "pow.Scalar": lambda: ([2.0, T(3, 4)], {}),
    "prod.default": lambda: ([T(3, 4)], {}),
    "prod.dim_int": lambda: ([T(3, 4), 1], {}),
    "rand.default": lambda: ([[3, 4]], {}),
    "randn.default": lambda: ([[3, 4]], {}),
    "randperm.default": lambda: ([10], {}),
    "reflection_pad1d.default": lambda: ([T(2, 3, 6), [2, 2]], {}),
    "reflection_pad2d.default": lambda: ([T(2, 3, 6, 6), [2, 2, 2, 2]], {}),
    "reflection_pad3d.default": lambda: ([T(2, 3, 4, 4, 4), [1, 1, 1, 1, 1, 1]], {}),
    "repeat.default": lambda: ([T(2, 3), [2, 2]], {}),
    "replication_pad2d.default": lambda: ([T(2, 3, 6, 6), [2, 2, 2, 2]], {}),
    "replication_pad3d.default": lambda: ([T(2, 3, 4, 4, 4), [1, 1, 1, 1, 1, 1]], {}),
    "scalar_tensor.default": lambda: ([2.0], {}),
    "scatter.src": lambda: ([T(3, 4), 1, torch.tensor([[0, 1], [2, 3], [1, 1]]), T(3, 2)], {}),
    "scatter.value": lambda: ([T(3, 4), 1, torch.tensor([[0, 1], [2, 3], [1, 1]]), 2.0], {}),
    "scatter_add.default": lambda: (
        [T(3, 4), 1, torch.tensor([[0, 1], [2, 3], [1, 1]]), T(3, 2)],
        {},
    ),
    "scatter_reduce.two": lambda: (
        [T(3, 4), 1, torch.tensor([[0, 1], [2, 3], [1, 1]]), T(3, 2), "sum"],
        {},
    ),
    "select.int": lambda: ([T(3, 4), 1, 2], {}),
    "select_scatter.default": lambda: ([T(3, 4), T(3), 1, 2], {}),
    "slice.Tensor": lambda: ([T(3, 4), 1, 1, 3, 1], {}),
    "slice_scatter.default": lambda: ([T(3, 4), T(3, 2), 1, 1, 3, 1], {}),
    "sort.default": lambda: ([T(3, 4), 1], {}),
    "split_with_sizes.default": lambda: ([T(3, 4), [1, 3], 1], {}),
    "squeeze.dim": lambda: ([T(3, 1, 4), 1], {}),
    "squeeze.dims": lambda: ([T(3, 1, 4), [1]], {}),
    "sum.dim_IntList": lambda: ([T(3, 4), [1]], {}),
    "sym_numel.default": lambda: ([T(3, 4)], {}),
    "sym_size.int": lambda: ([T(3, 4), 1], {}),
    "sym_storage_offset.default": lambda: ([T(3, 4)], {}),
    "sym_stride.int": lambda: ([T(3, 4), 1], {}),
    "topk.default": lambda: ([T(3, 4), 2, 1], {}),
    "unsqueeze.default": lambda: ([T(3, 4), 1], {}),
    "upsample_bilinear2d.vec": lambda: ([T(2, 3, 4, 4), [8, 8], False, None], {}),
    "upsample_nearest2d.vec": lambda: ([T(2, 3, 4, 4), [8, 8], None], {}),
    "var.correction": lambda: ([T(3, 4), [1]], {}),
    "var.dim": lambda: ([T(3, 4), [1]], {}),
    "view.default": lambda: ([T(3, 4), [4, 3]], {}),
    "where.self": lambda: ([T(3, 4, dtype=torch.bool), T(3, 4), T(3, 4)], {}),
    "detach.default": lambda: ([T(3, 4)], {}),
    "alias.default": lambda: ([T(3, 4)], {}),
    "clone.default": lambda: ([T(3, 4)], {}),
}


def op_of(name):
    p, o = name.split(".")
    return getattr(getattr(torch.ops.aten, p), o)


def auto(name):
    """Elementwise ops: (Tensor self[, Tensor other | Scalar other])."""
    schema = op_of(name)._schema
    args, kw = [], {}
    for a in schema.arguments:
        if a.kwarg_only or a.has_default_value():
            if a.name == "rounding_mode":
                kw["rounding_mode"] = "floor"
            continue
        ty = str(a.type)
        if ty == "Tensor":
            dt = torch.long if "bitwise" in name else (torch.bool if "logical" in name else f)
            args.append(T(3, 4, dtype=dt))
        elif ty in ("Scalar", "number"):
            args.append(2 if "bitwise" in name else 2.0)
        else:
            return None
    return lambda: (args, kw)


IDX = (10**6, -(10**6))
INTS = (-(10**6), 10**6, -1, 0, 2**31, -(2**40))


def mutations(args, kwargs):
    """(label, args, kwargs) variants."""
    flat = [("a", i, v) for i, v in enumerate(args)] + [("k", k, v) for k, v in kwargs.items()]

    def put(where, key, value):
        a, k = list(args), dict(kwargs)
        (a if where == "a" else k)[key] = value
        return a, k

    out = [("base", list(args), dict(kwargs))]
    for where, key, v in flat:
        if isinstance(v, torch.Tensor):
            for d in range(v.dim()):
                if v.shape[d] > 1:
                    shape = list(v.shape)
                    shape[d] = 1
                    out.append(
                        (
                            f"{key}.dim{d}=1",
                            *put(
                                where,
                                key,
                                v.new_ones(shape)
                                if v.dtype == torch.bool
                                else v.flatten()[: math.prod(shape)].reshape(shape).clone(),
                            ),
                        )
                    )
            if v.dim() > 0:
                out.append((f"{key}.numel1", *put(where, key, v.flatten()[:1].clone())))
                out.append((f"{key}.scalar", *put(where, key, v.flatten()[0].clone())))
            if not v.dtype.is_floating_point and v.dtype != torch.bool and not v.is_complex():
                for x in IDX:
                    out.append((f"{key}.idx{x}", *put(where, key, torch.full_like(v, x))))
        elif isinstance(v, bool) or v is None:
            continue
        elif isinstance(v, int):
            for x in INTS:
                out.append((f"{key}={x}", *put(where, key, x)))
        elif isinstance(v, float):
            for x in (float("nan"), -1.0, 1e30, 2.0):
                out.append((f"{key}={x}", *put(where, key, x)))
        elif (
            isinstance(v, list)
            and v
            and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
        ):
            for j in range(len(v)):
                for x in (-1, 0, 10**6, -(10**6)):
                    w = list(v)
                    w[j] = x
                    out.append((f"{key}[{j}]={x}", *put(where, key, w)))
            out.append((f"{key}.short", *put(where, key, v[:-1])))
            out.append((f"{key}.long", *put(where, key, v + [1])))
        elif isinstance(v, list) and v and all(isinstance(x, torch.Tensor) for x in v):
            for j, x in enumerate(v):
                if x.dim() and x.shape[0] > 1:
                    w = list(v)
                    w[j] = x[:1].clone()
                    out.append((f"{key}[{j}].short", *put(where, key, w)))
                if not x.dtype.is_floating_point:
                    for y in IDX:
                        w = list(v)
                        w[j] = torch.full_like(x, y)
                        out.append((f"{key}[{j}].idx{y}", *put(where, key, w)))
    return out


def fence_all(value, before):
    if isinstance(value, torch.Tensor):
        return fenced(value, before) if not value.is_complex() else value
    if isinstance(value, list):
        return [fence_all(v, before) for v in value]
    return value


def run_child(op, args, kwargs, before):
    pid = os.fork()
    if pid == 0:
        code = 0
        import resource

        vm = (
            int(next(ln for ln in open("/proc/self/status") if ln.startswith("VmSize")).split()[1])
            * 1024
        )
        resource.setrlimit(resource.RLIMIT_AS, (vm + 2**30, vm + 2**30))
        try:
            signal.alarm(10)
            a = [fence_all(v, before) for v in args]
            k = {n: fence_all(v, before) for n, v in kwargs.items()}
            out = op(*a, **k)
            outs = out if isinstance(out, (tuple, list)) else [out]
            for o in outs:  # read every output (an OOB view would fault here)
                if isinstance(o, torch.Tensor) and o.numel() and o.numel() < 10**7:
                    o.float().sum() if not o.is_complex() else o.abs().sum()
            del out, outs
            import gc

            gc.collect()
            for _ in range(50):  # make malloc check the heap
                x = torch.empty(1000)
                del x
            code = 0
        except BaseException:
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"SIGNAL{os.WTERMSIG(status)}"
    return {0: "ok", 3: "raised"}.get(os.WEXITSTATUS(status), f"exit{os.WEXITSTATUS(status)}")


def main(names):
    results = {}
    for name in names:
        make = BASE.get(name) or auto(name)
        if make is None:
            print("NO BASE", name, flush=True)
            continue
        op = op_of(name)
        torch.manual_seed(0)
        args, kwargs = make()
        for label, a, k in mutations(args, kwargs):
            for before in (False, True):
                r = run_child(op, a, k, before)
                if label == "base" and r != "ok":
                    print("BASE FAILS", name, r, flush=True)
                if r.startswith("SIGNAL") or r.startswith("exit"):
                    print(
                        "CRASH",
                        name,
                        label,
                        "guard-before" if before else "guard-after",
                        r,
                        flush=True,
                    )
                results.setdefault(name, []).append((label, before, r))
    Path(OUT).write_text(json.dumps(results), encoding="utf-8")


if __name__ == "__main__":
    names = sys.argv[1:] or sorted(
        n.removeprefix(ops.ATEN_PREFIX) for n in ops.ALLOWED if n.startswith(ops.ATEN_PREFIX)
    )
    main(names)
