"""pytorch/examples' LSTM network on 2 workers against a plain loop (issue 25, "Done when").

The benchmark writes the network of pytorch/examples ``mnist_rnn/main.py`` (``Net``: an
``nn.LSTM`` reads the 28 rows of a digit, ``BatchNorm1d``, ``Dropout2d`` twice, two Linear
layers, ``log_softmax``) into a file of its own and trains it on mnist-sample (real MNIST
digits: 4,000 to train, 1,000 to test) for N rounds, per seed, three ways:

* **2 workers**: a real ``computeshare host --model FILE.py:RowLSTM`` and two
  ``computeshare join`` processes on 127.0.0.1, batch 32 per worker, SGD momentum 0.9,
  ``--lr 0.05`` (the hub's linear scaling rule steps at 0.05 × 64/32 = 0.1 on the
  sample-weighted mean gradient of the 64 samples), ``--schedule cosine``, zstd, one
  gradient a round;
* **plain loop**: one process, the same initial weights (the hub's own builder and seed),
  the same 64 samples per step (the union of the two shards' batches, from
  ``sampling.py``), ``torch.optim.SGD(lr=0.1 × the cosine factor, momentum=0.9)``;
* **plain loop, BatchNorm per worker**: the same, but each step's two halves go through
  the model on their own (BatchNorm normalises each worker's 32 samples, as on the
  workers), their losses averaged, and the running statistics set to the mean of the two
  halves' (the hub's combination): the 2-worker session's arithmetic in one process.

All three are scored by the same function on the 1,000 test images (the hub's
``trained_model.pth`` loaded into the class; the hub's own figure is shown too). What
cannot be the same: the dropout masks (each worker draws its own; the loops draw theirs
from a seeded generator). With the dropout off, the session and the per-worker loop take
the same steps to float rounding (``tests/e2e/test_own_models_e2e.py``).

    python -m benchmarks.bench_own_rnn                # 5 seeds x 1,200 rounds (~12 min)
    python -m benchmarks.bench_own_rnn --quick        # 1 seed x 300 rounds (~2 min)
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import torch

from benchmarks._common import exit_on_signal, table
from benchmarks.bench_graph import WORKERS, log, loopback_session
from benchmarks.core.sessions import cleanup

BATCH = 32  # per worker
LR = 0.05  # --lr: the rate for one worker's batch
DATASET = "mnist-sample"
TOLERANCE = 0.01  # the bound: within 1 point

MODEL_FILE = '''\
"""pytorch/examples mnist_rnn/main.py's Net, as its README trains it on MNIST."""
import torch.nn.functional as F
from torch import nn


class RowLSTM(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.rnn = nn.LSTM(input_size=28, hidden_size=64, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(64)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, num_classes)

    def forward(self, input):
        input = input.reshape(-1, 28, 28)
        output, _ = self.rnn(input)
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        return F.log_softmax(output, dim=1)
'''


def plain_loop(spec: str, rounds: int, seed: int, *, per_worker_bn: bool
               ) -> tuple[torch.nn.Module, float]:
    """The model trained alone with the hub's recipe (see the module's docstring).
    (model, seconds)."""
    from computeshare_desktop.data import load_dataset
    from computeshare_desktop.evaluation import batch_loss
    from computeshare_desktop.hub.config import HubConfig
    from computeshare_desktop.hub.lr_schedule import LrSchedule
    from computeshare_desktop.hub.user_model import build_hub_model
    from computeshare_desktop.sampling import shard_indices, stream_positions

    train = load_dataset(DATASET, "train")
    config = HubConfig(model=spec, dataset=DATASET, seed=seed, batch_size=BATCH, lr=LR,
                       schedule="cosine", rounds=rounds)
    model = build_hub_model(config, train.info)
    schedule = LrSchedule(config.schedule, config.warmup, config.rounds)
    scale = WORKERS * BATCH / BATCH  # ParameterServer's linear scaling rule
    opt = torch.optim.SGD(model.parameters(), lr=LR * scale, momentum=config.momentum)
    shards = [shard_indices(len(train), WORKERS, s, seed) for s in range(WORKERS)]
    stats = [b for n, b in model.named_buffers() if n.endswith(("running_mean",
                                                                "running_var"))]
    torch.manual_seed(1000 + seed)  # the loop's dropout masks
    model.train()
    began = time.perf_counter()
    for step in range(rounds):
        for group in opt.param_groups:
            group["lr"] = LR * scale * schedule.factor(step)
        halves = [shard[stream_positions(len(shard), seed, s, step * BATCH, BATCH)]
                  for s, shard in enumerate(shards)]
        parts = halves if per_worker_bn else [torch.cat(halves)]
        start, ends = [b.clone() for b in stats], []
        opt.zero_grad()
        for idx in parts:
            for b, s0 in zip(stats, start, strict=True):
                b.copy_(s0)
            loss = batch_loss(model, train.images[idx], train.labels[idx], train.info)
            (loss / len(parts)).backward()
            ends.append([b.clone() for b in stats])
        with torch.no_grad():
            for k, b in enumerate(stats):
                b.copy_(sum(end[k] for end in ends) / len(ends))
        opt.step()
    return model, time.perf_counter() - began


def score(model: torch.nn.Module) -> float:
    from computeshare_desktop.data import load_dataset
    from computeshare_desktop.evaluation import evaluate

    return evaluate(model, load_dataset(DATASET, "test"))[0]


def score_file(spec: str, seed: int, path: Path) -> float:
    """The hub's trained_model.pth, loaded into the class and scored as the loops' are."""
    from computeshare_desktop.data import dataset_info
    from computeshare_desktop.hub.config import HubConfig
    from computeshare_desktop.hub.user_model import build_hub_model

    model = build_hub_model(HubConfig(model=spec, dataset=DATASET, seed=seed),
                            dataset_info(DATASET))
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return score(model)


def pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--rounds", type=int, default=1200, help="global steps (19 epochs)")
    p.add_argument("--seeds", type=int, default=5, help="seeds 0..S-1, each run 3 ways")
    p.add_argument("--quick", action="store_true", help="1 seed of 300 rounds")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.seeds = 300, 1
    torch.set_num_threads(1)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, exit_on_signal)
    began = time.monotonic()
    rows, hub, loop, halves = [], [], [], []
    try:
        with tempfile.TemporaryDirectory(prefix="cs-bench-rnn-") as tmp:
            root = Path(tmp)
            path = root / "row_lstm.py"
            path.write_text(MODEL_FILE, encoding="utf-8")
            spec = f"{path}:RowLSTM"
            for seed in range(args.seeds):
                s = loopback_session("RowLSTM, 2 workers", spec, args.rounds, root,
                                     extra=("--seed", str(seed), "--lr", str(LR),
                                            "--schedule", "cosine"),
                                     timeout_s=120 + args.rounds)
                if len(s.rounds) != args.rounds or s.final is None:
                    raise RuntimeError(f"seed {seed}: {len(s.rounds)} rounds, no final eval")
                hub.append(score_file(spec, seed, s.out / "trained_model.pth"))
                model, loop_s = plain_loop(spec, args.rounds, seed, per_worker_bn=False)
                loop.append(score(model))
                model, halves_s = plain_loop(spec, args.rounds, seed, per_worker_bn=True)
                halves.append(score(model))
                log(f"seed {seed}: 2 workers {pct(hub[-1])} (hub says "
                    f"{pct(s.final['accuracy'])}), plain loop {pct(loop[-1])}, BatchNorm "
                    f"per worker {pct(halves[-1])}")
                rows.append([seed, args.rounds, pct(hub[-1]), pct(s.final["accuracy"]),
                             pct(loop[-1]), pct(halves[-1]),
                             f"{100 * (hub[-1] - loop[-1]):+.2f}",
                             f"{100 * (hub[-1] - halves[-1]):+.2f}", f"{s.wall_s:.0f}",
                             f"{loop_s:.0f} + {halves_s:.0f}"])
    finally:
        cleanup()
    means = [statistics.mean(xs) for xs in (hub, loop, halves)]
    rows.append(["mean", "", pct(means[0]), "", pct(means[1]), pct(means[2]),
                 f"{100 * (means[0] - means[1]):+.2f}", f"{100 * (means[0] - means[2]):+.2f}",
                 "", ""])
    if len(hub) > 1:
        rows.append(["std", "", f"{100 * statistics.stdev(hub):.2f}", "",
                     f"{100 * statistics.stdev(loop):.2f}",
                     f"{100 * statistics.stdev(halves):.2f}", "", "", "", ""])
    print(table(["seed", "rounds", "2 workers (trained_model.pth)", "2 workers (hub's figure)",
                 "plain loop", "plain loop, BatchNorm per worker", "gap to loop, points",
                 "gap to per-worker loop, points", "session wall s", "loops s"], rows,
                "rrrrrrrrrr"))
    within = abs(means[0] - means[1]) <= TOLERANCE
    print(f"\nmean gap {100 * (means[0] - means[1]):+.2f} points: "
          f"{'within' if within else 'NOT within'} {100 * TOLERANCE:g} point of the plain "
          f"loop. Global batch {WORKERS} x {BATCH}, SGD momentum 0.9, lr {LR} per worker "
          f"batch ({LR * WORKERS:g} per step of {WORKERS * BATCH}), cosine; "
          f"{time.monotonic() - began:.0f} s in all.")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
