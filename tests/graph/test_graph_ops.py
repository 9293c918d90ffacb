"""The op allow-list: derived from torch's core ATen tag, reviewed on every torch change,
and wide enough for the classification networks people fine-tune."""

from __future__ import annotations

import operator

import pytest
import torch
from torch import nn
from torch._export.serde.serialize import GraphModuleDeserializer

from computeshare_desktop.graph import GraphRefused, export_training_graph, load_training_graph
from computeshare_desktop.graph import ops
from computeshare_desktop.models import flat


def _aten(name: str) -> torch._ops.OpOverload:
    packet, overload = name.split(".")
    return getattr(getattr(torch.ops.aten, packet), overload)


def _core_tagged() -> set[str]:
    found = set()
    for full in torch._C._dispatch_get_all_op_names():
        if not full.startswith("aten::"):
            continue
        packet, _, overload = full[len("aten::"):].partition(".")
        try:
            op = _aten(f"{packet}.{overload or 'default'}")
        except (AttributeError, RuntimeError):
            continue
        if torch.Tag.core in op.tags:
            found.add(f"{packet}.{overload or 'default'}")
    return found


def test_the_list_is_torchs_core_opset_less_the_exclusions():
    """Fails when a torch release changes the core opset: review the change, then update
    ops.py (this is the point: the list is read, not followed)."""
    core = _core_tagged()
    uninitialised_core = ops.UNINITIALISED & core
    assert core == ops.CORE_ATEN | ops.EXCLUDED.keys() | uninitialised_core
    assert not ops.CORE_ATEN & ops.EXCLUDED.keys()
    assert not (ops.EXTRA_ATEN.keys() | {"empty_permuted.default"}) & core


def test_every_allowed_name_is_a_real_op():
    for target in ops.ALLOWED:
        if target.startswith(ops.ATEN_PREFIX):
            assert isinstance(_aten(target.removeprefix(ops.ATEN_PREFIX)),
                              torch._ops.OpOverload), target
    resolve = GraphModuleDeserializer().deserialize_operator
    assert resolve(ops.GETITEM) is operator.getitem
    assert {resolve(t) for t in ops.SYMBOLIC} == {
        operator.add, operator.sub, operator.mul, operator.floordiv, operator.neg,
        torch.sym_max, torch.sym_min}


def test_ops_off_the_list_are_refused_naming_them():
    for target in ("torch.load", "torch.ops.aten.resize_.default", "torch.ops.prims.add.default"):
        with pytest.raises(GraphRefused, match="not allowed"):
            ops.check_target(target)
    ops.check_target("torch.ops.aten.convolution.default")


def test_inplace_dropout_and_stochastic_depth_export_load_and_train():
    """Dropout(inplace=True) and torchvision's stochastic depth (MobileNetV3, EfficientNet,
    ConvNeXt have them) lower to bernoulli on uninitialised memory: allowed, because
    bernoulli overwrites every element."""
    torchvision = pytest.importorskip("torchvision")

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.depth = torchvision.ops.StochasticDepth(0.2, "row")
            self.drop = nn.Dropout(0.3, inplace=True)
            self.head = nn.Linear(8, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.conv(x)
            return self.head(self.drop((y + self.depth(y)).mean((2, 3))))

    torch.manual_seed(0)
    model = Net().train()
    graph = export_training_graph(model, torch.randn(2, 3, 8, 8))
    loaded = load_training_graph(graph.program, graph.trainable, graph.state,
                                 hub_torch=torch.__version__)
    loaded.load_flat(flat.flat_parameters(model))
    loss = nn.functional.cross_entropy(loaded.module(torch.randn(3, 3, 8, 8)),
                                       torch.tensor([1, 2, 3]))
    loss.backward()
    assert torch.isfinite(loss)
    assert all(p.grad is not None for p in loaded.parameters)
    assert {"bernoulli.p", "empty.memory_format"} <= {
        t.removeprefix(ops.ATEN_PREFIX) for t in _targets(graph.program)}


def _targets(program: bytes) -> set[str]:
    import json

    return {n["target"] for n in json.loads(program)["graph_module"]["graph"]["nodes"]}
