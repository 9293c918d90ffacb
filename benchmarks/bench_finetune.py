"""Fine-tuning a torchvision model from a weights file: 2 workers on a shaped 100 Mbit/s LAN
against one machine training alone, time to a target test accuracy.

Needs root (network namespaces, as ``benchmarks.bench_lan``). Data: mnist-sample (bundled,
offline; user image folders come with issue 19). The starting weights are written by the
benchmark itself, since nothing may be downloaded: ``torchvision:resnet18`` (BatchNorm,
adapted to 1 channel and 10 classes as the hub builds it) is pre-trained for an epoch on
another data set, scikit-learn's 1,797 8x8 digits scaled up to MNIST's 20x20-in-28x28
layout, its BatchNorm statistics are then recomputed over those digits (a pass in train
mode with a cumulative average), and its last layer (``fc``) is initialised afresh, as
when a pre-trained backbone gets a new head. So the backbone knows digit strokes from
another source, and the head knows nothing. (MobileNetV3-small was tried first: its
BatchNorm momentum of 0.01 leaves the running statistics, and so any evaluation, near
chance for the few hundred steps a 2-core machine can afford.)

Rows, each from that file:

* **alone**: one process, one torch thread (each worker gets one too), the whole training
  set, batch 32, SGD momentum 0.9 at lr 0.01 (``--lr``: the rate for one worker's batch),
  the test set scored every 1/40 of the budget (2 s at least) with the clock stopped;
* **2 workers, 100 Mbit/s**: real ``computeshare host --model torchvision:... --weights
  FILE`` and two ``computeshare join`` processes in network namespaces whose links are
  shaped to 100 Mbit/s with htb (``benchmarks/lan``), ``--preset auto`` (the default: it
  measures the first rounds and picks lossless, int8 or local steps + top-k), batch 32 per
  worker; weights are snapshotted and scored after the run, so scoring never slows it.

each for the whole network and for ``--train-only fc`` (the head: 5,130 of 11.2 M
parameters; frozen ones never travel, but the frozen backbone's forward pass still runs).
Time to target counts from the first step (alone) or from the opening of round 1 (the
workers' first download included; the hub's export and the workers' start before it are
one-off costs, not counted).

    sudo .venv/bin/python -m benchmarks.bench_finetune            # ~8 min (2 cores)
    sudo .venv/bin/python -m benchmarks.bench_finetune --quick    # ~3 min
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn

from benchmarks._common import exit_on_signal, table
from benchmarks.bench_graph import one_off

ARCH = "torchvision:resnet18"
HEAD = "fc"  # --train-only: the head (5,130 of 11.2 M parameters)
NEW_HEAD = "fc"  # the last layer, initialised afresh in the weights file
DATASET = "mnist-sample"
BATCH = 32
LR = 0.01
MOMENTUM = 0.9
MAX_SCORED = 40  # snapshots of a 2-worker run scored at most (evenly spaced, and the last)


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- the weights
def digits_as_mnist() -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's 8x8 digits as uint8 1x28x28 images laid out as MNIST's (a 20x20
    digit in the middle), and their labels."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    x = nn.functional.interpolate(x, size=(20, 20), mode="bilinear", align_corners=False)
    x = nn.functional.pad(x, (4, 4, 4, 4))
    images = (x.clamp(0, 1) * 255).round().to(torch.uint8)
    return images, torch.tensor(digits.target, dtype=torch.int64)


def write_weights(path: Path, epochs: int, seed: int = 1) -> dict[str, Any]:
    """Pre-train ARCH on the other digits and save its state_dict with a fresh last layer."""
    from computeshare_desktop.data import dataset_info
    from computeshare_desktop.evaluation import batch_loss
    from computeshare_desktop.models import build_model_from_spec, parse_model_spec

    info = dataset_info(DATASET)
    model = build_model_from_spec(parse_model_spec(ARCH), info, seed=seed)
    images, labels = digits_as_mnist()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(seed)
    began = time.perf_counter()
    model.train()
    for _ in range(epochs):
        for idx in torch.randperm(len(labels), generator=gen).split(64):
            if len(idx) < 2:
                continue
            opt.zero_grad()
            batch_loss(model, images[idx], labels[idx], info).backward()
            opt.step()
    recalibrate(model, _norm(images, info))
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model(_norm(images[i:i + 500], info))
                            for i in range(0, len(labels), 500)])
        source_acc = (logits.argmax(1) == labels).float().mean().item()
    head = model.get_submodule(NEW_HEAD)
    assert isinstance(head, nn.Linear)
    with torch.no_grad(), torch.random.fork_rng(devices=[]):  # as torchvision does it
        torch.manual_seed(seed)
        nn.init.normal_(head.weight, 0, 0.01)
        nn.init.zeros_(head.bias)
    torch.save(model.state_dict(), path)
    return {"seconds": time.perf_counter() - began, "source_accuracy": source_acc,
            "numel": sum(p.numel() for p in model.parameters()),
            "samples": len(labels), "epochs": epochs}


def recalibrate(model: nn.Module, inputs: torch.Tensor) -> None:
    """BatchNorm's running statistics as the plain average over ``inputs`` (train-mode
    forward passes, no gradients), then momentum back as it was."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    saved = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average
    model.train()
    with torch.no_grad():
        for chunk in inputs.split(128):
            model(chunk)
    for m, momentum in zip(norms, saved, strict=True):
        m.momentum = momentum


def _norm(images: torch.Tensor, info: Any) -> torch.Tensor:
    from computeshare_desktop.data import normalize

    return normalize(images, info)


def fresh_model(weights: Path, train_only: str | None) -> nn.Module:
    """The model the hub starts from: built, loaded and frozen by the hub's own functions."""
    from computeshare_desktop.data import dataset_info
    from computeshare_desktop.hub.config import HubConfig
    from computeshare_desktop.hub.user_model import build_hub_model

    config = HubConfig(model=ARCH, dataset=DATASET, weights=str(weights),
                       train_only=train_only or "")
    return build_hub_model(config, dataset_info(DATASET))


def accuracy(model: nn.Module) -> float:
    from computeshare_desktop.data import load_dataset
    from computeshare_desktop.evaluation import evaluate

    return evaluate(model, load_dataset(DATASET, "test"))[0]


# ---------------------------------------------------------------------------- alone
def alone(weights: Path, train_only: str | None, target: float, budget_s: float,
          eval_s: float, seed: int = 0) -> dict[str, Any]:
    """One process training on the whole set, one thread, until ``target`` or ``budget_s``
    of training; scored every ``eval_s`` of training with the clock stopped."""
    from computeshare_desktop.data import load_dataset
    from computeshare_desktop.evaluation import batch_loss

    train = load_dataset(DATASET, "train")
    model = fresh_model(weights, train_only)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=LR,
                          momentum=MOMENTUM)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    curve: list[tuple[int, float, float]] = [(0, 0.0, scored(model))]
    clock, step, due = 0.0, 0, eval_s
    while clock < budget_s and curve[-1][2] < target:
        for idx in torch.randperm(len(train), generator=gen).split(BATCH):
            model.train()
            began = time.perf_counter()
            opt.zero_grad()
            batch_loss(model, train.images[idx], train.labels[idx], train.info).backward()
            opt.step()
            clock += time.perf_counter() - began
            step += 1
            if clock >= due:
                due = clock + eval_s
                curve.append((step, clock, scored(model)))
                if curve[-1][2] >= target or clock >= budget_s:
                    break
    return {"curve": curve, "step_s": clock / max(1, step)}


def scored(model: nn.Module) -> float:
    """Test accuracy, on both cores (nothing else runs while a row is scored)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        return accuracy(model)
    finally:
        torch.set_num_threads(threads)


# ---------------------------------------------------------------------------- 2 workers
def on_lan(weights: Path, train_only: str | None, target: float, budget_s: float,
           snapshot_every: int, preset: str, rounds: int) -> dict[str, Any]:
    """Hub + 2 workers in namespaces at 100 Mbit/s; snapshots scored after the run."""
    from benchmarks.lan.net import ShapedLan
    from benchmarks.lan.runs import Spec, run_cs, summarize

    args: tuple[str, ...] = ("--weights", str(weights), "--preset", preset)
    if train_only:
        args += ("--train-only", train_only)
    spec = Spec("cs", f"finetune {preset}", ARCH, 2, "100mbit", args, steps=rounds,
                budget_s=budget_s, min_steady=1, snapshot_every=snapshot_every, batch=BATCH)
    work = Path(tempfile.mkdtemp(prefix="bench-finetune-"))
    try:
        with ShapedLan(["hub", "w1", "w2"]) as lan:
            lan.shape_link("100mbit")
            result = run_cs(lan, spec, work)
        result["summary"] = summarize(result)
        result["curve"] = lan_curve(result, weights, train_only, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


def lan_curve(result: dict[str, Any], weights: Path, train_only: str | None,
              target: float) -> list[tuple[int, float, float]]:
    """(version, seconds since round 1 opened, accuracy) of the snapshots up to the first
    at ``target``, and the last one."""
    records = result["records"]
    rounds = [r for r in records if r.get("type") == "round"]
    if not rounds:
        raise RuntimeError(f"no rounds: {result.get('hub_stderr', '')[-1500:]}")
    start = rounds[0]["elapsed_s"] - rounds[0]["seconds"]
    shots = [(r["version"], r["elapsed_s"] - start, r["path"]) for r in records
             if r.get("type") == "snapshot"]
    every = max(1, -(-len(shots) // MAX_SCORED))  # ~1 s to score each: MAX_SCORED at most
    shots = shots[every - 1::every] + ([shots[-1]] if len(shots) % every else [])
    model = fresh_model(weights, train_only)
    curve: list[tuple[int, float, float]] = []
    for i, (version, t, path) in enumerate(shots):
        if curve and curve[-1][2] >= target and i != len(shots) - 1:
            continue
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        curve.append((version, t, scored(model)))
    return curve


# ---------------------------------------------------------------------------- the report
def time_to(curve: list[tuple[int, float, float]], target: float) -> tuple[int, float] | None:
    return next(((s, t) for s, t, a in curve if a >= target), None)


def cells(curve: list[tuple[int, float, float]], samples_per_step: int,
          targets: Sequence[float], base: list[tuple[int, float, float]] | None) -> list[str]:
    """Per target: seconds to it, the speed-up over ``base``'s (alone), samples to it."""
    out = []
    for target in targets:
        hit = time_to(curve, target)
        ref = time_to(base, target) if base is not None else None
        out += [f"{hit[1]:.1f}" if hit else "not reached",
                (f"{ref[1] / hit[1]:.2f}×" if hit and ref else "—") if base is not None else "",
                f"{hit[0] * samples_per_step:,}" if hit else "—"]
    return out


def lan_notes(s: dict[str, Any]) -> str:
    if "round_s" not in s:
        return str(s)
    mode = s.get("mode") or {}
    return (f"{s['round_s']:.2f} s a round (compute {s['compute_s']:.2f} s), "
            f"{s['bytes_per_round'] / 1e6:.2f} MB a round (medians); auto → "
            f"{mode.get('preset', '?')} ({mode.get('codec', '?')}, "
            f"H={mode.get('local_steps', '?')})")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--targets", type=float, nargs="+", default=[0.90, 0.95],
                   help="test accuracies to time (the last one ends a row)")
    p.add_argument("--budget", type=float, default=180.0,
                   help="seconds of training per row at most (head rows: a third)")
    p.add_argument("--rounds", type=int, default=1000,
                   help="the 2-worker session's --rounds (its top-k warm-up follows it)")
    p.add_argument("--pretrain-epochs", type=int, default=1)
    p.add_argument("--preset", default="auto", choices=("auto", "lan", "wifi", "slow"))
    p.add_argument("--no-head", action="store_true", help="skip the --train-only rows")
    p.add_argument("--quick", action="store_true", help="targets 80%% and 90%%, 60 s a row")
    args = p.parse_args(argv)
    if args.quick:
        args.targets, args.budget = [0.80, 0.90], 60.0
    from benchmarks.lan.net import netns_available
    if not netns_available():
        print("needs root and `ip netns` (network namespaces)", file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, exit_on_signal)
    began = time.monotonic()
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="cs-bench-finetune-") as tmp:
        weights = Path(tmp) / "resnet18_other_digits.pth"
        torch.set_num_threads(2)
        made = write_weights(weights, args.pretrain_epochs)
        start = accuracy(fresh_model(weights, None))
        log(f"weights: {made['epochs']} epoch(s) on {made['samples']} other digits in "
            f"{made['seconds']:.0f} s, {100 * made['source_accuracy']:.1f}% on them; "
            f"head re-initialised; start: {100 * start:.1f}% on mnist-sample's test set")
        torch.set_num_threads(1)
        for train_only in (None, *(() if args.no_head else (HEAD,))):
            what = "whole network" if train_only is None else f"--train-only {train_only}"
            budget = args.budget if train_only is None else args.budget / 3
            solo = alone(weights, train_only, args.targets[-1], budget,
                         eval_s=max(2.0, budget / 40))
            log(f"{what}, alone: {solo['curve'][-1]}, {1000 * solo['step_s']:.0f} ms a step")
            rows.append([what, "1 machine alone",
                         *cells(solo["curve"], BATCH, args.targets, None),
                         f"{100 * solo['curve'][-1][2]:.2f}% at {solo['curve'][-1][1]:.0f} s",
                         f"{1000 * solo['step_s']:.0f} ms a step of {BATCH}"])
            lan = on_lan(weights, train_only, args.targets[-1], budget, 2, args.preset,
                         args.rounds)
            notes = lan_notes(lan["summary"])
            log(f"{what}, 2 workers: {lan['curve'][-1]}; {notes}")
            rows.append([what, "2 workers, 100 Mbit/s",
                         *cells(lan["curve"], 2 * BATCH, args.targets, solo["curve"]),
                         f"{100 * lan['curve'][-1][2]:.2f}% at {lan['curve'][-1][1]:.0f} s",
                         notes])
        log("one-off costs of the graph (in-process)")
        costs = one_off(ARCH, reps=1)
    heads = []
    for target in args.targets:
        pc = f"{100 * target:g}%"
        heads += [f"time to {pc}, s", "speed-up vs alone", f"samples to {pc}"]
    print(table(["training", "who", *heads, "last scored", "notes"], rows,
                "ll" + "rrr" * len(args.targets) + "ll"))
    print(f"\n{ARCH}, {DATASET}; weights: {made['epochs']} epoch(s) on scikit-learn's "
          f"{made['samples']} 8x8 digits ({100 * made['source_accuracy']:.1f}% there), head "
          f"re-initialised ({100 * start:.1f}% on the test set at the start); "
          f"{time.monotonic() - began:.0f} s in all.")
    print(f"One-off, before round 1 (not in the times above): the hub's export "
          f"{costs['export_s']:.1f} s, the graph {costs['graph_bytes'] / 1e6:.2f} MB "
          f"({costs['program_bytes'] / 1e3:.0f} kB of program JSON, {costs['ops']} ops, "
          f"{costs['stats_values']:,} running-statistic values = "
          f"{costs['stats_bytes_per_round'] / 1e3:.0f} kB a round), the worker's decode + "
          f"check + rebuild {costs['check_s']:.2f} s; the trainable weights then come whole "
          f"with the first model (the whole network: {4 * made['numel'] / 1e6:.1f} MB a worker).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
