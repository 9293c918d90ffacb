"""Sync vs async with a straggler: three workers, one throttled to a third of the others.

Every worker is a real `computeshare join` process on loopback, throttled with --max-rate
(two at FAST samples/s, one at FAST/3), so the throttle, not this machine's cores, sets
each worker's pace. Three modes train the same samples (sync: R rounds of 3 batches;
async: 3R single-batch updates) and are evaluated every 3 x 32 x E samples:

* sync, balanced (the default): the hub gives the slow worker a smaller batch;
* sync, --no-balance: equal batches, so every round waits for the slow worker;
* async: each update applied on arrival, staleness-aware learning rate.

Reported per mode, median of --repeats runs interleaved (A B C A B C ...): seconds from
the first round to 95% test accuracy (benchmarks/targets.py), final accuracy after the same
samples, samples/s, and async's staleness histogram.

    .venv/bin/python -m benchmarks.bench_async            # about 3 minutes here
    .venv/bin/python -m benchmarks.bench_async --repeats 5 --fast 2000
    .venv/bin/python -m benchmarks.bench_async --repeats 1 --rounds 30 --eval-every 10 \
        --results /tmp/async.jsonl --report /tmp/async.md      # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import CLI, free_ports, home_env, median_known, stop, table
from benchmarks.targets import ASYNC

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "async.jsonl"
REPORT = ROOT / "docs" / "BENCHMARKS-ASYNC.md"
PIN = "135790"
WORKERS = 3
BATCH = 32
MODES: dict[str, tuple[str, ...]] = {
    "sync, balanced": ("--mode", "sync"),
    "sync, equal batches": ("--mode", "sync", "--no-balance"),
    "async": ("--mode", "async"),
}


def run_one(mode: str, rounds: int, eval_every: int, fast: float, work: Path) -> dict[str, Any]:
    """One session: the hub and three throttled workers; its metrics and timings."""
    asynchronous = "async" in MODES[mode]
    scale = WORKERS if asynchronous else 1  # an async round is one worker's batch
    port = free_ports()
    out = work / "out"
    env = home_env(work / "home", COMPUTESHARE_PIN=PIN)
    hub = subprocess.Popen(
        [*CLI, "host", "--bind", "127.0.0.1", "--port", str(port), "--workers", str(WORKERS),
         "--rounds", str(rounds * scale), "--eval-every", str(eval_every * scale),
         "--batch-size", str(BATCH), "--codec", "zstd", "--no-advertise", "--quiet",
         "--out", str(out), *MODES[mode]],
        env=env, stdout=subprocess.DEVNULL, stderr=(work / "hub.err").open("wb"))
    rates = [fast, fast, fast / 3]
    workers = [subprocess.Popen(
        [*CLI, "join", f"127.0.0.1:{port}", "--device", "cpu", "--threads", "1", "--quiet",
         "--name", f"w{i}", "--max-rate", str(rate), "--wait", "60"],
        env=env, stdout=subprocess.DEVNULL, stderr=(work / f"w{i}.err").open("wb"))
        for i, rate in enumerate(rates)]
    started = time.monotonic()
    try:
        hub.wait(timeout=600)
    finally:
        stop([hub, *workers], signal.SIGKILL)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return {"mode": mode, "rounds": rounds, "fast": fast, "slow": fast / 3,
            "hub_exit": hub.returncode, "wall_s": time.monotonic() - started,
            **summarize(records, scale)}


def summarize(records: list[dict[str, Any]], scale: int) -> dict[str, Any]:
    """Time to the target from the first round, final accuracy, throughput, staleness."""
    rounds = [r for r in records if r["type"] == "round"]
    evals = [r for r in records if r["type"] == "eval"]
    begin = rounds[0]["elapsed_s"] - rounds[0]["seconds"]  # the first round's opening
    end = rounds[-1]["elapsed_s"]
    reached = next((e for e in evals if e["accuracy"] >= ASYNC.accuracy), None)
    histograms = [r for r in records if r["type"] == "staleness"]
    return {"time_to_target_s": reached["elapsed_s"] - begin if reached else None,
            "samples_to_target": reached["version"] * BATCH * WORKERS // scale
            if reached else None,
            "final_accuracy": evals[-1]["accuracy"],
            "samples": sum(r["samples"] for r in rounds), "train_s": end - begin,
            "samples_per_s": sum(r["samples"] for r in rounds) / max(1e-9, end - begin),
            "staleness": histograms[-1] if histograms else None,
            "curve": [(e["version"] * BATCH * WORKERS // scale, round(e["accuracy"], 4))
                      for e in evals]}


def verdict(results: list[dict[str, Any]], balanced_over_async: float, ages: list[int]) -> str:
    """What the measured ratio means (the sentence follows the numbers, whichever way)."""
    rates = {mode: median_known([r["samples_per_s"] for r in results if r["mode"] == mode])
             for mode in MODES}
    sync_rate, async_rate = rates["sync, balanced"], rates["async"]
    rate = (f"sync then moves {sync_rate / async_rate:.2f}x async's samples a second"
            if sync_rate and async_rate else "sync then keeps every worker busy")
    stale = f"async's updates are {ages[0]} to {ages[-1]} versions old"
    if balanced_over_async < 1:
        return (f"Balancing already takes most of a steady straggler's cost away: {rate}, "
                f"and each of its steps uses fresh gradients, while {stale} and need more "
                "samples for the same accuracy. Async pays off where balancing cannot "
                "follow: speeds that change from round to round (a shared or thermally "
                "throttled machine), workers that come and go, and links whose latency "
                "varies.")
    return (f"Async wins even against balanced batches here ({rate}; {stale}): the "
            "straggler's share of each round costs sync more than stale updates cost async.")


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """The markdown report: medians per mode, and what they mean."""
    pc = f"{100 * ASYNC.accuracy:.0f}%"
    lines = [
        "# Sync vs async with a straggler",
        "",
        f"Command: `.venv/bin/python -m benchmarks.bench_async --repeats {args.repeats} "
        f"--fast {args.fast:g} --rounds {args.rounds}` (loopback, {os.cpu_count()} cores; "
        f"{time.strftime('%Y-%m-%d')}).",
        "",
        f"Three `computeshare join` processes: two throttled to {args.fast:g} samples/s and "
        f"one to {args.fast / 3:g} (`--max-rate`), mnist-sample, simplenet, batch {BATCH}, "
        f"zstd. Each mode trains the same {args.rounds * WORKERS * BATCH:,} samples (sync: "
        f"{args.rounds} rounds of 3 batches; async: {3 * args.rounds} updates of one). "
        f"Medians of {args.repeats} runs per mode, interleaved.",
        "",
        table(["mode", f"time to {pc} (s)", f"samples to {pc}", "final accuracy", "samples/s"],
              [mode_row(mode, [r for r in results if r["mode"] == mode]) for mode in MODES],
              align="lrrrr"),
    ]
    times = {mode: median_known([r["time_to_target_s"] for r in results if r["mode"] == mode])
             for mode in MODES}
    a, b, e = times["async"], times["sync, balanced"], times["sync, equal batches"]
    hist = [r["staleness"] for r in results if r["staleness"]]
    ages = sorted({int(k) for h in hist for k in h["counts"]})
    if a and b and e and ages:
        lines += ["", f"Time to {pc}: async is {e / a:.2f}x as fast as sync with equal batches "
                      f"(every round waits for the straggler) and {b / a:.2f}x sync with "
                      "balanced batches. " + verdict(results, b / a, ages)]
    if hist:
        last = hist[-1]
        lines += ["", f"Async staleness (last run; bound {last['bound']}, versions between an "
                      f"update's model and the one it updated): "
                      + ", ".join(f"{k}: {v}" for k, v in last["counts"].items())
                      + f"; refused {last['refused']}."]
    return "\n".join(lines) + "\n"


def mode_row(mode: str, runs: list[dict[str, Any]]) -> list[str]:
    """A mode's medians: time and samples to the target, final accuracy, samples/s."""
    t = median_known([r["time_to_target_s"] for r in runs])
    n = median_known([r["samples_to_target"] for r in runs])
    acc = median_known([r["final_accuracy"] for r in runs])
    rate = median_known([r["samples_per_s"] for r in runs])
    if acc is None or not rate:
        return [mode, "-", "-", "-", "-"]
    return [mode, f"{t:.1f}" if t is not None else "not reached",
            f"{n:,.0f}" if n is not None else "-", f"{100 * acc:.1f}%", f"{rate:,.0f}"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="runs per mode (default %(default)s)")
    p.add_argument("--rounds", type=int, default=300, help="sync rounds (default %(default)s)")
    p.add_argument("--eval-every", type=int, default=20, help="sync rounds between evaluations")
    p.add_argument("--fast", type=float, default=1200.0, help="the fast workers' samples/s")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--report", type=Path, default=REPORT)
    p.add_argument("--report-only", action="store_true", help="rewrite the report from "
                   "--results without running anything")
    args = p.parse_args()
    if args.report_only:
        results = [json.loads(line)
                   for line in args.results.read_text(encoding="utf-8").splitlines()]
        args.report.write_text(report(results, args), encoding="utf-8")
        return 0
    results = []
    for repeat in range(args.repeats):
        for mode in MODES:
            with tempfile.TemporaryDirectory(prefix="cs-async-") as tmp:
                result = run_one(mode, args.rounds, args.eval_every, args.fast, Path(tmp))
            result["repeat"] = repeat
            results.append(result)
            t = result["time_to_target_s"]
            print(f"{mode:22s} run {repeat + 1}: to {100 * ASYNC.accuracy:.0f}% "
                  f"{f'{t:.1f} s' if t is not None else 'not reached'}, final "
                  f"{100 * result['final_accuracy']:.1f}%, "
                  f"{result['samples_per_s']:,.0f} samples/s", flush=True)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("w") as f:
        for result in results:
            f.write(json.dumps(result) + "\n")
    text = report(results, args)
    args.report.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
