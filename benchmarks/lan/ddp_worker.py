"""One rank of torch DDP (gloo), trained exactly like ComputeShare's synchronous mode.

Same model and initial weights (seeded), same shard per rank, same samples per step (the
shard's stream), same SGD (momentum 0.9, lr = base lr x ranks: the linear scaling rule) and
one torch thread. Rank 0 writes a JSON line per step and a snapshot of the weights every
``--snapshot-every`` steps; the driver evaluates the snapshots afterwards. At the end a few
steps under ``no_sync()`` (no all-reduce) measure compute alone.

    GLOO_SOCKET_IFNAME=eth0 python benchmarks/lan/ddp_worker.py --rank 0 --world 2 \\
        --master 10.213.7.1 --model simplenet --steps 600 --out DIR
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from computeshare_desktop.data import load_dataset
from computeshare_desktop.evaluation import batch_loss
from computeshare_desktop.models import build_model
from computeshare_desktop.sampling import shard_indices, stream_positions

COMPUTE_PROBE_STEPS = 5


def main() -> None:
    p = argparse.ArgumentParser(allow_abbrev=False)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master", required=True)
    p.add_argument("--port", type=int, default=29511)
    p.add_argument("--model", default="simplenet")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--snapshot-every", type=int, default=0)
    p.add_argument("--budget", type=float, default=1e9, help="stop after this many seconds")
    p.add_argument("--check-every", type=int, default=25, help="steps between budget checks")
    p.add_argument("--min-steps", type=int, default=0,
                   help="run at least this many steps, budget or not (a slow link's few)")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0")
    dist.init_process_group("gloo", init_method=f"tcp://{args.master}:{args.port}",
                            rank=args.rank, world_size=args.world,
                            timeout=dt.timedelta(seconds=600))
    train = load_dataset("mnist-sample", "train")
    idx = shard_indices(len(train), args.world, args.rank, args.seed)
    images, labels = train.images[idx], train.labels[idx]
    model = build_model(args.model, train.info, seed=args.seed)
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr * args.world, momentum=0.9)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "steps.jsonl", "w") if args.rank == 0 else None
    started = time.monotonic()

    def step(n: int) -> float:
        began = time.perf_counter()
        pos = stream_positions(len(idx), args.seed, args.rank, n * args.batch, args.batch)
        opt.zero_grad()
        batch_loss(ddp, images[pos], labels[pos], train.info).backward()
        opt.step()
        return time.perf_counter() - began

    steps = 0
    for n in range(args.steps):
        seconds = step(n)
        steps = n + 1
        if log is not None:
            log.write(json.dumps({"step": steps, "seconds": seconds,
                                  "elapsed_s": time.monotonic() - started}) + "\n")
            log.flush()
            if args.snapshot_every and steps % args.snapshot_every == 0:
                torch.save(model.state_dict(), out / f"v{steps:07d}.pth")
                log.write(json.dumps({"snapshot": steps, "path": str(out / f"v{steps:07d}.pth"),
                                      "elapsed_s": time.monotonic() - started}) + "\n")
        if steps % args.check_every == 0:  # rarely: this all-reduce is not DDP's own cost
            stop = torch.tensor([time.monotonic() - started > args.budget
                                 and steps >= args.min_steps], dtype=torch.int32)
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)  # every rank stops on the same step
            if stop.item():
                break
    compute = []
    with ddp.no_sync():  # the same work without the all-reduce: compute alone
        for n in range(COMPUTE_PROBE_STEPS):
            compute.append(step(steps + n))
    if log is not None:
        log.write(json.dumps({"compute_probe_s": statistics.median(compute),
                              "steps": steps}) + "\n")
        log.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
