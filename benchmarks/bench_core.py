"""Core benchmark: round time, bytes on the wire, codec cost and demo time-to-accuracy.

Runs everything side by side in one process tree on this machine and prints Markdown tables
(and writes them to ``--out``). What it measures:

1. Real ``computeshare host`` + two ``computeshare join`` processes on 127.0.0.1 (simplenet,
   mnist-sample, batch 32 per worker), for the raw and zstd codecs, repeated and alternated
   (raw, zstd / zstd, raw / ...) so machine noise hits both alike. Round time at the hub is
   split into the slowest worker's compute and everything else (hub + transport + codec).
2. Bytes per round from the hub's metrics, and bytes per push / model download computed from
   the protocol (real header frames from ``protocol.encode`` + real codec payloads).
3. ``computeshare demo`` as a subprocess: wall time from launch to the first eval >= 95%,
   and the default demo's final accuracy and wall time.
4. Codec encode/decode time and compression ratio on real gradients.

Usage (repository root, with the project's virtual environment active)::

    python -m benchmarks.bench_core [--rounds 300] [--reps 4] [--out docs/BENCHMARKS.md]
    python -m benchmarks.bench_core --rounds 40 --reps 1 --demos 1 --codec-calls 20  # a look

The parts live in ``benchmarks/core/``: sessions, the in-process replay, codecs, demos, and
the report (whose targets come from ``benchmarks/targets.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import torch

from benchmarks._common import exit_on_signal, write_text
from benchmarks.core.codecs import codec_bench
from benchmarks.core.demos import DemoRun, run_demo
from benchmarks.core.plan import CODECS
from benchmarks.core.replay import replay
from benchmarks.core.report import render
from benchmarks.core.sessions import SessionRun, cleanup, round_stats, run_session
from benchmarks.targets import CORE

def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=300,
                   help="rounds per session (default %(default)s)")
    p.add_argument("--reps", type=int, default=4, help="sessions per codec (default %(default)s)")
    p.add_argument("--warmup", type=int, default=20, help="rounds skipped per session")
    p.add_argument("--demos", type=int, default=2, help="default demo runs (default %(default)s)")
    p.add_argument("--codec-calls", type=int, default=200)
    p.add_argument("--out", default=None, help="also write the report to this Markdown file")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for sig in (signal.SIGTERM, signal.SIGHUP):  # so that `finally: cleanup()` still runs
        signal.signal(sig, exit_on_signal)
    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="cs-bench-") as tmp:
            report = run_all(args, Path(tmp), started)
    finally:
        cleanup()
    total = time.monotonic() - t0
    report = report.replace("@@TOTAL@@", f"{total:.0f}")
    print(report)
    if args.out:
        write_text(report, args.out)
        print(f"written to {args.out}", file=sys.stderr)
    return 0


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def run_all(args: argparse.Namespace, root: Path, started: dt.datetime) -> str:
    log("codec micro-benchmark")
    codec_table, big_note = codec_bench(args.codec_calls, max(5, args.codec_calls // 10))
    runs: list[SessionRun] = []
    for rep in range(args.reps):
        for codec in (CODECS if rep % 2 == 0 else CODECS[::-1]):
            run = run_session(codec, args.rounds, rep + 1, root)
            log(f"session {codec} #{rep + 1}: {args.rounds} rounds, wall {run.wall_s:.1f} s")
            runs.append(run)
    stats = {c: round_stats(runs, c, args.warmup) for c in CODECS}
    log("in-process replay")
    replayed = replay(args.rounds)
    log("demos")
    defaults: list[DemoRun] = []
    eval20 = two = None
    # Interleaved so a slow spell does not land on one kind of run only.
    demos = [("default-1", [], 300.0), ("eval-every-20", ["--eval-every", "20"], 300.0)]
    demos += [(f"default-{i + 2}", [], 300.0) for i in range(args.demos - 1)]
    demos += [("two-epochs", ["--rounds", "125"], 200.0)]
    for label, extra, timeout in demos:
        d = run_demo(label, extra, root, timeout)
        log(f"demo {label}: {d.wall_s:.1f} s, {100 * d.final_acc:.2f}%, "
            f"{100 * CORE.demo_accuracy:.0f}% at {d.first_95_poll_s}")
        if label.startswith("default"):
            defaults.append(d)
        elif label == "eval-every-20":
            eval20 = d
        else:
            two = d
    assert eval20 is not None
    return render(args, started, stats, replayed, codec_table, big_note, eval20, defaults, two)


if __name__ == "__main__":
    sys.exit(main())
