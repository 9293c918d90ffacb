"""Two in-process workers with real gradients drive HubCore past several epochs of their shards.

The hub's final weights must equal single-process SGD on the sample-weighted mean of both
shards' batches, with lr = base_lr * 2 and momentum: the distributed run is that run. The
workers keep their copies with the real ``Replica`` from the hub's delta downloads.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from helpers.hub import T0, Worker, admit, make_hub, only, send, train_set
from torch.nn.utils import parameters_to_vector

from computeshare_desktop.data import dataset_info
from computeshare_desktop.evaluation import batch_loss
from computeshare_desktop.events import RoundClosed
from computeshare_desktop.models import build_model
from computeshare_desktop.protocol.messages import Ack, Done, Model, Shard, ShardData
from computeshare_desktop.protocol.tensors import frame_to_tensor
from computeshare_desktop.sampling import shard_indices, stream_positions
from computeshare_desktop.worker.compute import GradientComputer
from computeshare_desktop.worker.replica import Replica

SAMPLES, BATCH, ROUNDS = 400, 50, 10  # 200 images a shard: 4 batches an epoch, 2.5 epochs


def load_shard(hub, w: Worker) -> GradientComputer:  # type: ignore[no-untyped-def]
    (out,) = send(hub, w.peer, Shard(w.token, 0, w.welcome.shard_size), T0)
    assert isinstance(out.msg, ShardData)
    n = out.msg.image_shape[0]
    assert n == w.welcome.shard_size
    images = frame_to_tensor(out.body[0], "uint8", out.msg.image_shape, 1 << 26)
    labels = frame_to_tensor(out.body[1], "int64", [n], 1 << 26)
    info = dataset_info(w.welcome.dataset)
    model = build_model(w.welcome.model, info)  # unseeded: the hub's weights arrive by MODEL
    return GradientComputer(model, info, torch.device("cpu"), images, labels,
                            shard=w.welcome.shard, seed=w.welcome.seed)


def small_train_set():  # type: ignore[no-untyped-def]
    return train_set().subset(torch.arange(SAMPLES))


def reference_run(hub) -> torch.Tensor:  # type: ignore[no-untyped-def]
    data, config = small_train_set(), hub.config
    model = build_model(config.model, data.info, seed=config.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    sgd = torch.optim.SGD(params, lr=config.lr * 2, momentum=config.momentum)
    shards = [shard_indices(len(data), 2, s, config.seed) for s in range(2)]
    for version in range(ROUNDS):
        sgd.zero_grad()
        for s, idx in enumerate(shards):
            batch = idx[stream_positions(len(idx), config.seed, s, version * BATCH, BATCH)]
            (batch_loss(model, data.images[batch], data.labels[batch], data.info) / 2).backward()
        sgd.step()
    return parameters_to_vector(params).detach()


@pytest.fixture()
def one_thread() -> Iterator[None]:
    """Tiny batches gain nothing from intra-op threads, and lose a lot on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.usefixtures("one_thread")
def test_two_workers_train_past_one_epoch_exactly_like_one_process() -> None:
    hub = make_hub(data=small_train_set(), batch_size=BATCH, rounds=ROUNDS, lr=0.05)
    assert (SAMPLES // 2) // BATCH * 2 < ROUNDS  # more than two epochs of each shard
    workers = [admit(hub, b"w1", T0), admit(hub, b"w2", T0)]
    computers = [load_shard(hub, w) for w in workers]
    replicas = [Replica(hub.server.numel) for _ in workers]
    losses = []
    now = T0
    while not hub.done:
        now += 0.01
        models = {}
        for i, w in enumerate(workers):
            for o in w.pull(hub, now, after=replicas[i].version):
                if isinstance(o.msg, Model):
                    models[o.peer] = o
        assert set(models) == {b"w1", b"w2"}, f"version {hub.server.version}"
        for i, (w, c) in enumerate(zip(workers, computers, strict=True)):
            o = models[w.peer]
            assert o.msg.base == (-1 if o.msg.version == 0 else o.msg.version - 1)
            replicas[i].apply(o.msg, o.body[0])
            assert torch.equal(replicas[i].weights, hub.server.published.weights)
            assert (o.msg.batch, o.msg.steps) == (BATCH, 0)
            update = c.gradient(replicas[i].weights, o.msg.start, o.msg.batch)
            assert update.samples == BATCH
            reply = w.push(hub, now, update.flat, version=o.msg.version, loss=update.loss,
                           samples=update.samples, codec="zstd")
            assert isinstance(only(reply, w.peer), Ack)
        rounds = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
        assert len(rounds) == 1 and rounds[0].contributors == 2
        losses.append(rounds[0].loss)
    assert hub.server.version == ROUNDS and len(losses) == ROUNDS
    assert all(isinstance(only(w.pull(hub, now, after=ROUNDS)), Done) for w in workers)
    assert torch.allclose(hub.server.flat(), reference_run(hub), atol=1e-6, rtol=0)
    assert sum(losses[-3:]) < sum(losses[:3])  # and it learned something
