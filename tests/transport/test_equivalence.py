"""Synchronous training with N workers equals single-process SGD with batch N*b.

So does the local-steps mode with one local step and a plain outer SGD (DiLoCo's outer
loop reduced to today's synchronous step): the equivalence that keeps that mode honest.
"""

from __future__ import annotations

import pytest
import torch

from computeshare_desktop.data import dataset_info, load_dataset
from computeshare_desktop.evaluation import batch_loss
from computeshare_desktop.models import build_model, flat_parameters
from computeshare_desktop.sampling import shard_indices, stream_positions
from helpers.net import RunningHub, WorkerThread

ROUNDS, BATCH, LR, SEED = 6, 8, 0.01, 3


def reference_weights(num_workers: int, model_name: str) -> torch.Tensor:
    """Plain torch SGD over the union of the workers' batches, one step per round."""
    train = load_dataset("mnist-sample", "train")
    info = dataset_info("mnist-sample")
    model = build_model(model_name, info, seed=SEED)
    opt = torch.optim.SGD(model.parameters(), lr=LR * num_workers, momentum=0.9)
    shards = [shard_indices(len(train), num_workers, s, SEED) for s in range(num_workers)]
    for version in range(ROUNDS):
        idx = torch.cat([shard[stream_positions(len(shard), SEED, s, version * BATCH, BATCH)]
                         for s, shard in enumerate(shards)])
        opt.zero_grad()
        batch_loss(model, train.images[idx], train.labels[idx], info).backward()
        opt.step()
    return flat_parameters(model)


@pytest.mark.parametrize("num_workers,model_name,codec,local_steps", [
    (2, "simplenet", "raw", 0), (3, "simplenet", "zstd", 0), (2, "mlp", "zstd", 0),
    (2, "simplenet", "zstd", 1), (3, "mlp", "raw", 1)])
def test_sync_training_matches_single_process_sgd(tmp_path, num_workers, model_name, codec,
                                                  local_steps):
    hub = RunningHub(tmp_path, workers=num_workers, rounds=ROUNDS, batch_size=BATCH, lr=LR,
                     seed=SEED, model=model_name, codec=codec, eval_every=0,
                     deadline_floor_s=60.0, local_steps=local_steps, outer="sgd",
                     balance=False)  # equal batches, whatever the timing noise
    workers = [WorkerThread(hub.port, f"w{i}") for i in range(num_workers)]
    try:
        result = hub.join()
        for w in workers:
            w.join()
            assert w.error is None, w.error
    finally:
        for w in workers:
            w.close()
        hub.close()
    rounds = hub.rounds()
    assert [r.version for r in rounds] == list(range(1, ROUNDS + 1))
    assert all(r.contributors == num_workers for r in rounds)
    assert result is not None and result.version == ROUNDS
    got = flat_parameters(hub.session.server.model)
    want = reference_weights(num_workers, model_name)
    initial = flat_parameters(build_model(model_name, dataset_info("mnist-sample"), seed=SEED))
    assert (want - initial).abs().max() > 1e-3  # training really moved the weights
    assert (got - want).abs().max().item() < 1e-5
