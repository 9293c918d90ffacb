"""One measured run on the shaped LAN: ComputeShare (hub + workers) or torch DDP (gloo).

Each run starts real processes in the LAN's namespaces, watches their output files while
they train, samples every machine's byte counters as rounds complete, stops at the run's
step count or time budget, and returns plain numbers (a dict that goes to JSON as is).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .net import ShapedLan

REPO = Path(__file__).resolve().parents[2]
PIN = "424242"
PORT = 7341
POLL_S = 0.2


@dataclass(frozen=True)
class Spec:
    """What to run: a system and mode, a model, a number of workers and a link."""

    system: str  # "cs" (ComputeShare) or "ddp"
    label: str  # the mode as the tables name it
    model: str
    workers: int
    link: str  # a key of net.LINKS
    args: tuple[str, ...] = ()  # extra `computeshare host` arguments (the mode)
    steps: int = 600  # global steps (rounds of one batch per worker) to train
    budget_s: float = 90.0  # stop once past this with enough steady rounds measured
    min_steady: int = 3  # rounds after warm-up to measure, budget permitting
    snapshot_every: int = 0  # steps between weight snapshots (0: none)
    batch: int = 32

    @property
    def key(self) -> str:
        return "|".join(str(v) for v in (self.system, self.label, self.model, self.workers,
                                          self.link, " ".join(self.args), self.steps,
                                          self.snapshot_every))


@dataclass
class Watch:
    """Byte counters sampled as the run's rounds complete."""

    marks: list[tuple[int, int, float]] = field(default_factory=list)  # (rounds, tx, time)

    def mark(self, lan: ShapedLan, rounds: int) -> None:
        if not self.marks or self.marks[-1][0] != rounds:
            self.marks.append((rounds, lan.all_tx_bytes(), time.monotonic()))

    def between(self, first: int, last: int) -> tuple[int, int, int] | None:
        """(bytes sent on the LAN, first round, last round) over the widest window of
        marks from the end of round ``first`` or later to the end of ``last`` or earlier:
        the bytes of rounds first+1 .. last."""
        start = next((m for m in self.marks if m[0] >= first), None)
        end = next((m for m in reversed(self.marks) if m[0] <= last), None)
        if start is None or end is None or end[0] <= start[0]:
            return None
        return end[1] - start[1], start[0], end[0]


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "COMPUTESHARE_HOME": str(home), "OMP_NUM_THREADS": "1",
            "PYTHONPATH": str(REPO), "COMPUTESHARE_PIN": PIN, "GLOO_SOCKET_IFNAME": "eth0"}


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            break  # a line being written
    return out


def _tail(path: Path, size: int = 2000) -> str:
    """The end of a log file (stderr goes to files: a full pipe would stall the process)."""
    try:
        return path.read_bytes()[-size:].decode(errors="replace")
    except OSError:
        return ""


def _stop(procs: list[subprocess.Popen[bytes]], first_signal: int) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(first_signal)
    deadline = time.monotonic() + 30
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_cs(lan: ShapedLan, spec: Spec, work: Path) -> dict[str, Any]:
    """A hub in namespace "hub" and ``spec.workers`` CLI workers; the measured rounds."""
    out, env = work / "out", _env(work / "home")
    cli = [sys.executable, "-m", "computeshare_desktop.cli"]
    hub = lan.popen("hub", [*cli, "host", "--bind", "0.0.0.0", "--port", str(PORT),
                            "--workers", str(spec.workers), "--rounds", str(spec.steps),
                            "--model", spec.model, "--batch-size", str(spec.batch),
                            "--pin", PIN, "--no-advertise", "--out", str(out),
                            "--eval-every", "0", "--quiet",
                            "--snapshot-every", str(spec.snapshot_every), *spec.args],
                    env=env, stdout=subprocess.DEVNULL, stderr=(work / "hub.err").open("wb"))
    started = time.monotonic()
    while not (out / "session.json").exists() and hub.poll() is None:
        time.sleep(POLL_S)
    workers = [lan.popen(f"w{i}", [*cli, "join", f"{lan.address('hub')}:{PORT}", "--device",
                                   "cpu", "--threads", "1", "--quiet", "--name", f"w{i}"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for i in range(1, spec.workers + 1)]
    watch = Watch()
    watch.mark(lan, 0)
    stopped_early = False
    while hub.poll() is None:
        records = _lines(out / "metrics.jsonl")
        rounds = [r for r in records if r.get("type") == "round"]
        watch.mark(lan, len(rounds))
        steady = len(rounds) - _warmup(records)
        elapsed = time.monotonic() - started
        if (elapsed > spec.budget_s and steady >= spec.min_steady) or \
                (elapsed > 3 * spec.budget_s and steady >= 1) or elapsed > 6 * spec.budget_s:
            stopped_early = True
            break
        time.sleep(POLL_S)
    _stop([hub, *workers], signal.SIGTERM)  # (SIGINT is ignored when run in the background)
    err = _tail(work / "hub.err")
    records = _lines(out / "metrics.jsonl")
    return {"spec": asdict(spec), "key": spec.key, "stopped_early": stopped_early,
            "hub_exit": hub.returncode, "hub_stderr": err, "records": records,
            "marks": watch.marks, "wall_s": time.monotonic() - started}


def _warmup(records: list[dict[str, Any]]) -> int:
    """Rounds not to measure: the first (whole-model downloads), and any before a switch."""
    rounds = 0
    skip = 1
    for r in records:
        if r.get("type") == "round":
            rounds += 1
        elif r.get("type") == "mode":
            skip = rounds + 1
    return skip


def run_ddp(lan: ShapedLan, spec: Spec, work: Path) -> dict[str, Any]:
    """``spec.workers`` DDP ranks, one per worker machine; rank 0's steps."""
    env = _env(work / "home")
    script = REPO / "benchmarks" / "lan" / "ddp_worker.py"
    check_every = 1 if spec.model == "resnet18" else 25
    procs = [lan.popen(f"w{r + 1}", [
        sys.executable, str(script), "--rank", str(r), "--world", str(spec.workers),
        "--master", lan.address("w1"), "--model", spec.model, "--steps", str(spec.steps),
        "--batch", str(spec.batch), "--snapshot-every", str(spec.snapshot_every),
        "--budget", str(spec.budget_s), "--check-every", str(check_every),
        "--out", str(work / "ddp")], env=env, stdout=subprocess.DEVNULL,
        stderr=(work / f"rank{r}.err").open("wb")) for r in range(spec.workers)]
    started = time.monotonic()
    watch = Watch()
    watch.mark(lan, 0)
    while procs[0].poll() is None and time.monotonic() - started < 6 * spec.budget_s + 120:
        steps = [r for r in _lines(work / "ddp" / "steps.jsonl") if "step" in r]
        watch.mark(lan, len(steps))
        time.sleep(POLL_S)
    _stop(procs, signal.SIGTERM)
    err = _tail(work / "rank0.err")
    return {"spec": asdict(spec), "key": spec.key, "records": _lines(work / "ddp" /
                                                                      "steps.jsonl"),
            "marks": watch.marks, "rank0_exit": procs[0].returncode, "stderr": err,
            "wall_s": time.monotonic() - started}


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Medians of the steady rounds: round time, its compute and the rest, bytes, samples/s."""
    spec = result["spec"]
    if spec["system"] == "ddp":
        return _summarize_ddp(result)
    records = result["records"]
    rounds = [r for r in records if r.get("type") == "round"]
    skip = _warmup(records)
    steady = rounds[skip:]
    if not steady:
        return {"error": "no steady rounds", "hub_stderr": result.get("hub_stderr", "")}
    seconds = [r["seconds"] for r in steady]
    compute = [r["compute_s"] for r in steady]
    samples = sum(r["samples"] for r in steady)
    app = sum(r["bytes_in"] + r["bytes_out"] for r in steady)
    window = Watch(result["marks"]).between(skip, len(rounds))
    wire_ratio = None
    if window is not None:  # the messages of exactly the rounds the counters covered
        wire, first, last = window
        app_window = sum(r["bytes_in"] + r["bytes_out"] for r in rounds[first:last])
        wire_ratio = wire / app_window if app_window else None
    mode = next((r for r in records if r.get("type") == "mode"), None)
    return {
        "rounds": len(steady), "round_s": statistics.median(seconds),
        "compute_s": statistics.median(compute),
        "comm_s": statistics.median(s - c for s, c in zip(seconds, compute, strict=True)),
        "samples_per_s": samples / sum(seconds),
        "steps_per_round": statistics.median(r.get("steps", 1) for r in steady),
        "bytes_per_round": statistics.median(r["bytes_in"] + r["bytes_out"] for r in steady),
        "bytes_per_step": app / max(1, sum(r.get("steps", 1) for r in steady)),
        "wire_over_app": wire_ratio,
        "app_bytes_per_round": app / len(steady),
        "busy": statistics.median(r["busy"] for r in steady),
        "mode": mode, "final": next((r for r in records if r.get("type") == "eval"
                                     and r.get("final")), None),
    }


def _summarize_ddp(result: dict[str, Any]) -> dict[str, Any]:
    steps = [r for r in result["records"] if "step" in r]
    probe = next((r for r in result["records"] if "compute_probe_s" in r), None)
    steady = steps[2:]  # the first steps build DDP's buckets
    if not steady:
        return {"error": "no steady steps", "stderr": result.get("stderr", "")}
    seconds = [r["seconds"] for r in steady]
    step_s = statistics.median(seconds)
    compute = probe["compute_probe_s"] if probe else None
    window = Watch(result["marks"]).between(2, len(steps))
    per_step = window[0] / (window[2] - window[1]) if window else None
    batch, workers = result["spec"]["batch"], result["spec"]["workers"]
    return {"rounds": len(steady), "round_s": step_s, "compute_s": compute,
            "comm_s": step_s - compute if compute is not None else None,
            "samples_per_s": batch * workers * len(seconds) / sum(seconds),
            "steps_per_round": 1, "bytes_per_round": per_step, "bytes_per_step": per_step,
            "wire_over_app": None, "busy": compute / step_s if compute else None,
            "mode": None, "final": None}
