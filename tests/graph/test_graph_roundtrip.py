"""A stranger's network and torchvision's ResNet-18 go through the graph and come back
training exactly like the originals: same outputs, gradients, running statistics and SGD
steps, for any batch of 2 or more."""

from __future__ import annotations

import copy

import pytest
import torch
from graph_nets import TinyResNet, tiny_resnet
from torch import nn

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.graph import (
    GraphModel,
    TrainingGraph,
    export_training_graph,
    frozen_norms,
    load_training_graph,
)
from computeshare_desktop.models import flat

TOL = 1e-5


def rebuilt(model: nn.Module, graph: TrainingGraph) -> GraphModel:
    """What a worker does: load the graph, then take the hub's flat vector."""
    loaded = load_training_graph(graph.program, graph.trainable, graph.state,
                                 hub_torch=torch.__version__, aliases=graph.aliases)
    loaded.load_flat(flat.flat_parameters(model))
    return loaded


def step(module: nn.Module, params: list[nn.Parameter], x: torch.Tensor, y: torch.Tensor,
         seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward/backward with dropout drawn from ``seed``: the loss and the gradient."""
    for p in params:
        p.grad = None
    torch.manual_seed(seed)
    loss = nn.functional.cross_entropy(module(x), y)
    loss.backward()
    return loss.detach(), flat.gradients(params)


@pytest.mark.parametrize("batch", [2, 3, 7])
def test_same_loss_gradients_and_statistics_for_any_batch(exported, batch):
    original, graph = exported
    model = copy.deepcopy(original)
    loaded = rebuilt(model, graph)
    x, y = torch.randn(batch, 3, 16, 16), torch.randint(0, 10, (batch,))
    loss, grad = step(model, flat.trainable(model), x, y, seed=batch)
    loss_g, grad_g = step(loaded.module, loaded.parameters, x, y, seed=batch)
    assert torch.allclose(loss, loss_g, atol=TOL)
    assert grad.shape == grad_g.shape and torch.allclose(grad, grad_g, atol=TOL)
    buffers = dict(loaded.module.named_buffers())
    for name, buffer in model.named_buffers():
        assert torch.allclose(buffer.float(), buffers[name].float(), atol=TOL), name
    running = buffers["stem.1.running_mean"]
    assert not torch.equal(running, torch.zeros_like(running))  # statistics moved


def test_sgd_steps_match_the_original(exported):
    """Three SGD steps through the hub's flat layout (what workers and the hub do)."""
    original, graph = exported
    model = copy.deepcopy(original)
    loaded = rebuilt(model, graph)
    for seed in range(3):
        x, y = torch.randn(5, 3, 16, 16), torch.randint(0, 10, (5,))
        for params, module in ((flat.trainable(model), model),
                               (loaded.parameters, loaded.module)):
            _, grad = step(module, params, x, y, seed)
            flat.adopt(params, flat.flatten(params) - 0.1 * grad)
    assert torch.allclose(flat.flat_parameters(model), flat.flatten(loaded.parameters),
                          atol=TOL)


def test_the_graph_carries_no_weights_and_both_sides_agree_on_it(exported):
    original, graph = exported
    assert b"Symbol('s" in graph.program and b"stack_trace" not in graph.program
    assert list(graph.trainable) == [n for n, _ in original.named_parameters()]
    assert set(graph.state) == {n for n, _ in original.named_buffers()} | {"lifted_tensor_0"}
    assert all(type(t) is torch.Tensor for t in graph.state.values())
    loaded = rebuilt(original, graph)
    assert loaded.fingerprint == graph.fingerprint and graph.torch_version in torch.__version__
    assert loaded.op_count == graph.op_count > 20
    assert [p.shape for p in loaded.parameters] == [p.shape for p in original.parameters()]
    assert all(p.requires_grad for p in loaded.parameters)


def test_frozen_parameters_travel_as_state_and_stay_frozen():
    model = tiny_resnet(seed=1)
    for p in model.stem.parameters():
        p.requires_grad_(False)
    graph = export_training_graph(model, torch.randn(2, 3, 16, 16))
    assert not any(n.startswith("stem.") for n in graph.trainable)
    assert {"stem.0.weight", "stem.1.weight", "stem.1.bias"} <= set(graph.state)
    loaded = rebuilt(model, graph)
    frozen = dict(loaded.module.named_parameters())["stem.0.weight"]
    assert not frozen.requires_grad and torch.equal(frozen, model.stem[0].weight)
    # The frozen BatchNorm runs in eval mode: running statistics in, none updated, so
    # they do not travel; the trained part's BatchNorm trains as usual.
    assert frozen_norms(model) == ["stem.1"] and model.stem[1].training
    assert not any(n.startswith("stem.") for n in graph.mutated)
    assert any(n.startswith("stages.") for n in graph.mutated)
    before = loaded.module.get_buffer("stem.1.running_mean").clone()
    model.stem[1].eval()  # the eager reference, frozen the same way
    x, y = torch.randn(3, 3, 16, 16), torch.randint(0, 10, (3,))
    _, grad = step(model, flat.trainable(model), x, y, seed=0)
    _, grad_g = step(loaded.module, loaded.parameters, x, y, seed=0)
    assert torch.allclose(grad, grad_g, atol=TOL) and frozen.grad is None
    assert torch.equal(loaded.module.get_buffer("stem.1.running_mean"), before)


def test_a_norm_layer_without_parameters_or_with_trainable_ones_trains_as_usual():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, affine=False),
                          nn.BatchNorm2d(4), nn.Flatten(), nn.LazyLinear(10))
    model(torch.randn(2, 3, 8, 8))
    model[0].requires_grad_(False)
    assert frozen_norms(model) == []
    model[2].requires_grad_(False)
    assert frozen_norms(model) == ["2"]


def test_exporting_leaves_the_users_module_as_it_was():
    model = tiny_resnet(seed=2).eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    export_training_graph(model, torch.randn(2, 3, 16, 16))
    assert not model.training
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_a_batch_of_one_or_a_model_that_cannot_export_is_a_config_error():
    with pytest.raises(ConfigError, match="at least 2"):
        export_training_graph(tiny_resnet(), torch.randn(1, 3, 16, 16))

    class Branchy(TinyResNet):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x) if x.sum() > 0 else -super().forward(x)

    with pytest.raises(ConfigError, match="(?s)cannot be exported.*hint: .*torch.where"):
        export_training_graph(Branchy(), torch.randn(2, 3, 16, 16))

    class FixedBatch(TinyResNet):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x.view(4, 3, 16, 16))

    with pytest.raises(ConfigError, match="(?s)Constraints violated.*hint: .*fixes the batch"):
        export_training_graph(FixedBatch(), torch.randn(4, 3, 16, 16))

    class Uninitialised(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.empty_like(x) + x

    with pytest.raises(ConfigError, match="workers refuse: .*uninitialised memory"):
        export_training_graph(Uninitialised(), torch.randn(2, 3))


def test_torchvision_resnet18_round_trip():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).train()
    graph = export_training_graph(model, torch.randn(2, 3, 32, 32))
    assert len(graph.trainable) == 62 and len(graph.state) == 60  # 20 BatchNorms x 3
    loaded = rebuilt(model, graph)
    x, y = torch.randn(3, 3, 32, 32), torch.randint(0, 10, (3,))
    loss, grad = step(model, flat.trainable(model), x, y, seed=0)
    loss_g, grad_g = step(loaded.module, loaded.parameters, x, y, seed=0)
    assert torch.allclose(loss, loss_g, atol=TOL) and torch.allclose(grad, grad_g, atol=TOL)
    assert torch.allclose(model.bn1.running_var, loaded.module.get_buffer("bn1.running_var"))


def test_a_pt2_the_user_saved_goes_through_the_same_path(tmp_path):
    """PATH.pt2: the hub loads the user's own archive (torch.export.load is fine there),
    takes program_module() as its model and exports that for workers."""
    import io

    from computeshare_desktop.graph.inference import program_module

    model = tiny_resnet(seed=4)
    archive = io.BytesIO()
    torch.export.save(torch.export.export(
        model, (torch.randn(2, 3, 16, 16),),
        dynamic_shapes=({0: torch.export.Dim("batch", min=2)},)), archive)
    hub_model = program_module(torch.export.load(io.BytesIO(archive.getvalue())))
    graph = export_training_graph(hub_model, torch.randn(2, 3, 16, 16))
    loaded = rebuilt(hub_model, graph)
    x, y = torch.randn(3, 3, 16, 16), torch.randint(0, 10, (3,))
    loss, grad = step(hub_model, flat.trainable(hub_model), x, y, seed=0)
    loss_g, grad_g = step(loaded.module, loaded.parameters, x, y, seed=0)
    assert torch.allclose(loss, loss_g, atol=TOL) and torch.allclose(grad, grad_g, atol=TOL)


class Tied(nn.Module):
    """Two layers sharing one weight (a tied head), and a tensor made in forward."""

    def __init__(self) -> None:
        super().__init__()
        self.encode, self.decode = nn.Linear(8, 8), nn.Linear(8, 8)
        self.decode.weight = self.encode.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.encode(x)) + torch.zeros(x.shape[0], 8)
        return self.decode(hidden)


def test_tied_weights_stay_one_parameter():
    torch.manual_seed(0)
    model = Tied()
    graph = export_training_graph(model, torch.randn(2, 8))
    assert graph.aliases == {"decode.weight": "encode.weight"}
    assert "decode.weight" not in graph.state and "decode.weight" not in graph.trainable
    loaded = rebuilt(model, graph)
    assert loaded.module.encode.weight is loaded.module.decode.weight
    x, y = torch.randn(3, 8), torch.randint(0, 8, (3,))
    _, grad = step(model, flat.trainable(model), x, y, seed=0)
    _, grad_g = step(loaded.module, loaded.parameters, x, y, seed=0)
    assert torch.allclose(grad, grad_g, atol=TOL) and loaded.fingerprint == graph.fingerprint


def test_the_module_follows_its_device():
    """device= moves the tensors and the graph's own device arguments (torch.zeros in
    forward here); the meta device stands in for an accelerator."""
    model = Tied()
    graph = export_training_graph(model, torch.randn(2, 8))
    loaded = load_training_graph(graph.program, graph.trainable, graph.state,
                                 hub_torch=torch.__version__, aliases=graph.aliases,
                                 device="meta")
    out = loaded.module(torch.randn(3, 8, device="meta"))
    out.sum().backward()
    assert out.device.type == "meta" and out.shape == (3, 8)
    assert all(p.grad is not None and p.device.type == "meta" for p in loaded.parameters)
