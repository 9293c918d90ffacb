"""Shaped-LAN benchmark: ComputeShare's modes beside torch DDP (gloo) on a virtual LAN.

Needs root (network namespaces). Builds a LAN of namespaces joined by a bridge, with every
machine's link shaped by htb (unshaped, 1 Gbit/s, 100 Mbit/s, 20 Mbit/s), and runs real
processes on it: a `computeshare host` machine plus 1, 2 or 4 `computeshare join` workers,
or 1, 2 or 4 DDP ranks on the same worker machines, model, data and per-worker batch (32).
Every process uses one torch thread; all share this machine's cores.

    sudo .venv/bin/python -m benchmarks.bench_lan                 # everything (hours)
    sudo .venv/bin/python -m benchmarks.bench_lan --plan targets  # what the targets need
    sudo .venv/bin/python -m benchmarks.bench_lan --plan quick    # a smoke run

Each finished run is appended to --results (JSON lines) and skipped when the benchmark is
run again (--fresh starts over), so an interrupted run resumes. The report is rewritten
from all results at the end (--report-only rewrites it without running anything).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from benchmarks.lan import evaluate, report
from benchmarks.lan.net import LINKS, ShapedLan, netns_available
from benchmarks.lan.report import LOSSLESS
from benchmarks.lan.runs import Spec, run_cs, run_ddp, summarize

MODES: dict[str, tuple[str, ...]] = {
    LOSSLESS: ("--codec", "zstd", "--local-steps", "0"),  # = preset lan
    "fp16": ("--codec", "fp16", "--local-steps", "0"),
    "int8": ("--codec", "int8", "--local-steps", "0"),  # = preset wifi
    "top-k 1%": ("--codec", "topk", "--topk", "0.01", "--local-steps", "0"),
    "local 8, zstd": ("--codec", "zstd", "--local-steps", "8"),
    "preset slow": ("--preset", "slow"),  # top-k 1% + 8 local steps
    "auto": ("--preset", "auto"),
}
TWO_EPOCHS = 125  # steps of 2 x 32 samples: 8,000 samples, mnist-sample's train set twice
WORKERS = (1, 2, 4)


SPARSE = ("top-k 1%", "preset slow", "auto")  # the modes that send top-k (warm-up and all)


def spec(label: str, model: str, workers: int, link: str, *, steady: bool = False,
         **kw: Any) -> Spec:
    """``steady``: measure top-k without its warm-up (a throughput run sees the first
    rounds only, where the warm-up still sends up to 25%; whole runs keep it)."""
    system = "ddp" if label == "ddp" else "cs"
    args = MODES.get(label, ())
    if steady and label in SPARSE:
        args = (*args, "--topk-warmup", "0")
    return Spec(system, label, model, workers, link, args, **kw)


def throughput(models: tuple[str, ...], links: tuple[str, ...],
               workers: tuple[int, ...]) -> Iterator[Spec]:
    """Short runs: steady-state samples/s, round split and bytes."""
    for model in models:
        heavy = model == "resnet18"
        labels = (("ddp", LOSSLESS, "int8", "top-k 1%", "preset slow") if heavy else
                  ("ddp", *MODES))
        for link in links:
            for n in workers:
                for label in labels:
                    if heavy:
                        yield spec(label, model, n, link, steps=100_000, budget_s=60,
                                   min_steady=2, steady=True)
                    else:
                        yield spec(label, model, n, link, steps=100_000, budget_s=12,
                                   min_steady=20, steady=True)


def accuracy_runs() -> Iterator[Spec]:
    """Whole trainings with snapshots: time to a target accuracy, accuracy per sample."""
    for label in ("ddp", *MODES):  # simplenet, the default demo's 600 steps, at 100 Mbit/s
        yield spec(label, "simplenet", 2, "100mbit", steps=600, budget_s=600,
                   snapshot_every=20)
    for label in ("ddp", LOSSLESS, "int8", "top-k 1%"):  # the same samples, any link
        yield spec(label, "resnet18", 2, "unshaped", steps=TWO_EPOCHS, budget_s=3600,
                   snapshot_every=25)
    for label in ("preset slow", "auto"):  # ResNet-18 where it matters: 100 Mbit/s
        yield spec(label, "resnet18", 2, "100mbit", steps=TWO_EPOCHS, budget_s=3600,
                   snapshot_every=8)


def plan(name: str) -> list[Spec]:
    if name == "quick":
        return [spec(label, "simplenet", 2, "100mbit", steps=100_000, budget_s=8,
                     min_steady=10) for label in ("ddp", LOSSLESS, "int8", "preset slow")]
    targets = [*accuracy_runs(),
               *throughput(("resnet18",), ("100mbit",), (2,)),
               *throughput(("simplenet",), ("unshaped", "100mbit"), (2,))]
    if name == "targets":
        return targets
    rest = [*throughput(("simplenet", "resnet18"), tuple(LINKS), WORKERS)]
    return targets + [s for s in rest if s not in targets]


def current(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the current plan; a run whose spec changed since (e.g. top-k throughput
    without warm-up) stands in, marked, until its new version has run."""
    keys = {s.key for s in plan("full")}
    same = {(s.system, s.label, s.model, s.workers, s.link, s.steps) for s in plan("full")}
    ran = {r["key"] for r in rows}
    out = []
    for r in rows:
        s = r["spec"]
        if r["key"] in keys:
            out.append(r)
            continue
        ident = (s["system"], s["label"], s["model"], s["workers"], s["link"], s["steps"])
        old = r["key"].split("|")
        newer = [k for k in keys & ran
                 if k.split("|")[:5] == old[:5] and k.split("|")[6:] == old[6:]]
        if ident in same and not newer:
            out.append({**r, "spec": {**s, "label": s["label"] + " †"}})
    return out


def load(path: Path) -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["key"]] = row
    return done


def run_one(s: Spec, lans: dict[int, ShapedLan]) -> dict[str, Any]:
    lan = lans.get(s.workers)
    if lan is None:
        for old in lans.values():
            old.close()
        lans.clear()
        lan = lans[s.workers] = ShapedLan(["hub", *(f"w{i}" for i in range(1, s.workers + 1))])
        lan.__enter__()
    lan.shape_link(s.link)
    work = Path(tempfile.mkdtemp(prefix="bench-lan-"))
    try:
        result = (run_ddp if s.system == "ddp" else run_cs)(lan, s, work)
        result["summary"] = summarize(result)
        result["curve"] = evaluate.curve(result) if s.snapshot_every else []
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # Per-round records are summarized; they stay out of the results file (megabytes).
    result["records"] = [r for r in result["records"] if r.get("type") in ("mode", "eval")]
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--plan", choices=("full", "targets", "quick"), default="full")
    p.add_argument("--results", type=Path, default=Path("benchmarks/results/lan.jsonl"))
    p.add_argument("--out", type=Path, default=Path("docs/BENCHMARKS-LAN.md"))
    p.add_argument("--fresh", action="store_true", help="forget earlier results")
    p.add_argument("--report-only", action="store_true")
    p.add_argument("--links", nargs="+", choices=tuple(LINKS), default=None,
                   help="run only the plan's runs on these links")
    args = p.parse_args()
    if args.fresh and args.results.exists():
        args.results.unlink()
    done = load(args.results)
    if not args.report_only:
        if not netns_available():
            print("needs root and `ip netns` (network namespaces)", file=sys.stderr)
            return 2
        todo = [s for s in plan(args.plan) if s.key not in done
                and (args.links is None or s.link in args.links)]
        args.results.parent.mkdir(parents=True, exist_ok=True)
        lans: dict[int, ShapedLan] = {}
        try:
            for i, s in enumerate(sorted(todo, key=lambda s: s.workers), 1):
                began = time.monotonic()
                print(f"[{i}/{len(todo)}] {s.model} {s.label}, {s.workers} worker(s), "
                      f"{s.link}", flush=True)
                row = run_one(s, lans)
                done[s.key] = row
                with args.results.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                print(f"    {report.one_line(row)} ({time.monotonic() - began:.0f} s)",
                      flush=True)
        finally:
            for lan in lans.values():
                lan.close()
    args.out.write_text(report.render(current(list(done.values()))))
    print(f"report written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
