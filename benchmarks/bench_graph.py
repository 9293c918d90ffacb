"""Graph path overhead: a built-in model against the same network shipped as a checked graph.

Runs real ``computeshare host`` + two ``computeshare join`` processes on 127.0.0.1
(mnist-sample, batch 32 per worker, zstd, one gradient per round, seed 0), alternating
three models so machine noise hits them alike:

* ``simplenet``, the built-in (each worker builds it by name);
* ``FILE.py:SimpleNet``, the same architecture in a user file this benchmark writes (the
  hub exports it, each worker fetches the graph, checks it and rebuilds it);
* ``FILE.py:SimpleNetBN``, the same with BatchNorm after each conv, so that its running
  statistics travel with every model and every push (the statistics frame).

It reports the median round time, the slowest worker's compute in it and the rest, bytes per
round, the time from the hub's start to the first closed round (the workers' start, their
graph download and check included), and the one-off costs measured in-process with the
hub's and the worker's own functions: the export (``hub.user_model.ship_model``), the
graph's bytes, and the worker's decode + check + rebuild (``graph.load_training_graph``).

    python -m benchmarks.bench_graph              # 4 x 200 rounds per model (~3 min)
    python -m benchmarks.bench_graph --quick      # 1 x 60 rounds (~1 min)
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import torch

from benchmarks._common import (exit_on_signal, free_ports, kill, median, read_jsonl, table,
                                wait_all)
from benchmarks.core.sessions import cleanup, spawn
from benchmarks.lan.runs import Lines

PIN = "424242"
DATASET = "mnist-sample"
BATCH = 32
WORKERS = 2
POLL_S = 0.1
TICKS = os.sysconf("SC_CLK_TCK")

MODEL_FILE = '''\
"""SimpleNet as a user would write it (the built-in's architecture), and a BatchNorm twin."""
import torch
import torch.nn.functional as F
from torch import nn


def _side(size):
    return ((size - 4) // 2 - 4) // 2


class SimpleNet(nn.Module):
    def __init__(self, in_channels, num_classes, image_size):
        super().__init__()
        side = _side(image_size)
        self.conv1 = nn.Conv2d(in_channels, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.fc1 = nn.Linear(20 * side * side, 50)
        self.fc2 = nn.Linear(50, num_classes)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class SimpleNetBN(SimpleNet):
    def __init__(self, in_channels, num_classes, image_size):
        super().__init__(in_channels, num_classes, image_size)
        self.bn1 = nn.BatchNorm2d(10)
        self.bn2 = nn.BatchNorm2d(20)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.bn1(self.conv1(x)), 2))
        x = F.relu(F.max_pool2d(self.bn2(self.conv2(x)), 2))
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))
'''


@dataclass
class Session:
    """One finished loopback session: its round records and final evaluation."""

    label: str
    wall_s: float
    rounds: list[dict[str, Any]]
    final: dict[str, Any] | None
    out: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    cpu_marks: list[tuple[int, float]] = field(default_factory=list)


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def loopback_session(label: str, model: str, rounds: int, root: Path,
                     extra: Sequence[str] = (), timeout_s: float | None = None) -> Session:
    """A ``host`` process and two ``join`` processes on 127.0.0.1, until the session ends."""
    out = Path(tempfile.mkdtemp(prefix="session-", dir=root))
    port = free_ports()
    started = time.monotonic()
    hub = spawn(["host", "--pin", PIN, "--bind", "127.0.0.1", "--port", str(port),
                 "--workers", str(WORKERS), "--rounds", str(rounds), "--batch-size",
                 str(BATCH), "--codec", "zstd", "--local-steps", "0", "--no-balance",
                 "--eval-every", "0", "--seed", "0", "--dataset", DATASET, "--model", model,
                 "--out", str(out / "hub"), "--quiet", "--no-advertise", *extra],
                out / "host.log")
    workers = [spawn(["join", f"127.0.0.1:{port}", "--pin", PIN, "--device", "cpu",
                      "--threads", "1", "--quiet", "--name", f"bench-{i + 1}", "--wait", "60"],
                     out / f"worker{i + 1}.log") for i in range(WORKERS)]
    cpu = CpuWatch([hub, *workers], out / "hub" / "metrics.jsonl")
    try:
        cpu.follow(hub, timeout_s or 90 + rounds)
        wait_all([hub, *workers], 30, f"{label} session")
    except RuntimeError as exc:
        tail = (out / "host.log").read_text(encoding="utf-8", errors="replace")[-1500:]
        raise RuntimeError(f"{exc}\nhub log:\n{tail}") from None
    finally:
        for proc in (hub, *workers):
            if proc.poll() is None:
                kill(proc)
    records = read_jsonl(out / "hub" / "metrics.jsonl")
    steps = [r for r in records if r.get("type") == "round"]
    final = next((r for r in records if r.get("type") == "eval" and r.get("final")), None)
    return Session(label, time.monotonic() - started, steps, final, out / "hub", records,
                   cpu.marks)


class CpuWatch:
    """CPU seconds (user + system) of the session's processes, sampled with the rounds done:
    under a loaded machine, wall time per round swings with the neighbours; CPU time per
    round much less."""

    def __init__(self, procs: Sequence[subprocess.Popen[Any]], metrics: Path) -> None:
        self.procs, self.lines = procs, Lines(metrics)
        self.marks: list[tuple[int, float]] = []  # (rounds done, CPU seconds so far)

    def follow(self, hub: subprocess.Popen[Any], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while hub.poll() is None and time.monotonic() < deadline:
            rounds = sum(1 for r in self.lines.read() if r.get("type") == "round")
            self.marks.append((rounds, sum(_cpu_s(p.pid) for p in self.procs)))
            time.sleep(POLL_S)


def _cpu_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


def cpu_per_round(marks: list[tuple[int, float]], first: int, last: int) -> float | None:
    """CPU seconds per round between the first sample with ``first`` rounds done and the
    last one with at most ``last`` (before the final evaluation and export)."""
    start = next((m for m in marks if m[0] >= first), None)
    end = next((m for m in reversed(marks) if m[0] <= last), None)
    if start is None or end is None or end[0] <= start[0]:
        return None
    return (end[1] - start[1]) / (end[0] - start[0])


# ---------------------------------------------------------------------------- one-off costs
def one_off(spec: str, reps: int = 5) -> dict[str, float]:
    """Export on the hub, the graph's bytes, the worker's decode + check + rebuild, and the
    statistics frame, with the hub's and the worker's own functions (in this process)."""
    from computeshare_desktop.data import load_dataset
    from computeshare_desktop.graph import load_training_graph, torch_release
    from computeshare_desktop.hub.config import HubConfig
    from computeshare_desktop.hub.user_model import build_hub_model, ship_model
    from computeshare_desktop.protocol.graphs import decode_manifest, state_tensors

    train = load_dataset(DATASET, "train")
    config = HubConfig(model=spec, dataset=DATASET, seed=0)
    exports, checks = [], []
    shipped = None
    for _ in range(reps):
        model = build_hub_model(config, train.info)
        began = time.perf_counter()
        session_model = ship_model(model, config, train)
        exports.append(time.perf_counter() - began)
        shipped = session_model.graph
        assert shipped is not None
        began = time.perf_counter()
        manifest = decode_manifest(shipped.part("manifest"))
        state = state_tensors(shipped.part("state"), manifest)
        load_training_graph(shipped.part("program"), manifest.trainable, state,
                            hub_torch=torch_release(), aliases=manifest.aliases)
        checks.append(time.perf_counter() - began)
    assert shipped is not None
    stats = shipped.manifest.stats_numel()
    return {"export_s": median(exports), "check_s": median(checks),
            "manifest_bytes": len(shipped.part("manifest")),
            "program_bytes": len(shipped.part("program")),
            "state_bytes": len(shipped.part("state")),
            "graph_bytes": sum(len(p) for p in shipped.parts.values()),
            "ops": shipped.manifest.op_count, "stats_values": stats,
            # one frame with each MODEL and each PUSH: 2 per worker and round
            "stats_bytes_per_round": 4 * stats * 2 * WORKERS}


# ---------------------------------------------------------------------------- the report
def summary(sessions: list[Session], warmup: int) -> dict[str, float]:
    steady = [r for s in sessions for r in s.rounds[warmup:]]
    seconds = [r["seconds"] for r in steady]
    compute = [r["compute_s"] for r in steady]
    first = [s.rounds[0]["elapsed_s"] for s in sessions if s.rounds]
    cpu = [c for s in sessions
           if (c := cpu_per_round(s.cpu_marks, warmup, len(s.rounds) - 1)) is not None]
    return {"cpu_s": median(cpu) if cpu else float("nan"), "round_s": median(seconds),
            "compute_s": median(compute),
            "other_s": median(a - b for a, b in zip(seconds, compute, strict=True)),
            "bytes": median(r["bytes_in"] + r["bytes_out"] for r in steady),
            "first_round_s": median(first), "rounds": len(steady),
            "accuracy": median(s.final["accuracy"] for s in sessions if s.final),
            "loss": median(s.rounds[-1]["loss"] for s in sessions)}


def ms(x: float) -> str:
    return f"{1000 * x:.2f}"


def render(args: argparse.Namespace, variants: list[tuple[str, str]],
           runs: dict[str, list[Session]], costs: dict[str, dict[str, float]],
           total_s: float) -> str:
    stats = {label: summary(runs[label], args.warmup) for label, _ in variants}
    base = stats[variants[0][0]]
    rows = []
    for label, _ in variants:
        s = stats[label]
        rows.append([label, ms(s["round_s"]), f"{s['round_s'] / base['round_s']:.2f}×",
                     ms(s["cpu_s"]), f"{s['cpu_s'] / base['cpu_s']:.2f}×",
                     ms(s["compute_s"]), ms(s["other_s"]), f"{s['bytes'] / 1000:.1f}",
                     f"{s['first_round_s']:.2f}", f"{100 * s['accuracy']:.2f}%",
                     f"{s['loss']:.4f}", s["rounds"]])
    out = [table(["model", "round ms (median)", "vs built-in", "CPU ms per round (3 processes)",
                  "vs built-in", "compute ms", "other ms",
                  "kB per round", "hub start → round 1 closed, s", "final test accuracy",
                  "last round's loss", "rounds measured"], rows, "lrrrrrrrrrrr"), ""]
    cost_rows = []
    for label, _ in variants[1:]:
        c = costs[label]
        cost_rows.append([label, f"{c['export_s']:.2f}", f"{1000 * c['check_s']:.0f}",
                          f"{c['graph_bytes']:,}", f"{c['program_bytes']:,}",
                          f"{c['state_bytes']:,}", c["ops"], c["stats_values"],
                          f"{c['stats_bytes_per_round']:,}"])
    out.append(table(["model (graph)", "export on the hub, s", "worker decode+check+rebuild, ms",
                      "graph bytes (all parts)", "program JSON bytes", "state bytes", "ops",
                      "running-stat values", "stats bytes per round (2 workers)"],
                     cost_rows, "lrrrrrrrr"))
    out.append("")
    out.append(f"{args.reps} session(s) of {args.rounds} rounds per model, alternated; the "
               f"first {args.warmup} rounds of each skipped; {total_s:.0f} s in all.")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--reps", type=int, default=4, help="sessions per model")
    p.add_argument("--warmup", type=int, default=20, help="rounds skipped per session")
    p.add_argument("--quick", action="store_true", help="1 session of 60 rounds per model")
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.reps, args.warmup = 60, 1, 10
    torch.set_num_threads(1)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, exit_on_signal)
    began = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="cs-bench-graph-") as tmp:
            root = Path(tmp)
            path = root / "user_simplenet.py"
            path.write_text(MODEL_FILE, encoding="utf-8")
            variants = [("simplenet (built-in)", "simplenet"),
                        ("SimpleNet from a file (graph)", f"{path}:SimpleNet"),
                        ("SimpleNetBN from a file (graph)", f"{path}:SimpleNetBN")]
            runs: dict[str, list[Session]] = {label: [] for label, _ in variants}
            for rep in range(args.reps):
                order = variants if rep % 2 == 0 else variants[::-1]
                for label, spec in order:
                    s = loopback_session(label, spec, args.rounds, root)
                    log(f"{label} #{rep + 1}: wall {s.wall_s:.1f} s, "
                        f"median round {1000 * median(r['seconds'] for r in s.rounds):.1f} ms")
                    runs[label].append(s)
            log("one-off costs (in-process)")
            costs = {label: one_off(spec) for label, spec in variants[1:]}
            report = render(args, variants, runs, costs, time.monotonic() - began)
    finally:
        cleanup()
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
