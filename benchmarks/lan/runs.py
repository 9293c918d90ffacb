"""One measured run on the shaped LAN: ComputeShare (hub + workers) or torch DDP (gloo).

Each run starts real processes in the LAN's namespaces, watches their output files while
they train, samples every machine's byte counters as rounds complete, stops at the run's
step count or time budget, and returns plain numbers (a dict that goes to JSON as is).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._common import CLI, home_env, median, stop

from .net import ShapedLan

REPO = Path(__file__).resolve().parents[2]
PIN = "424242"
PORT = 7341
POLL_S = 0.05


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
    """Byte counters sampled every POLL_S while a run trains, with the rounds done so far.

    A window of rounds is taken between *quiet* samples (nothing moved until the next one:
    the workers are computing), so that no transfer is cut in two at either end; without
    quiet samples (rounds shorter than POLL_S) the window is approximate.
    """

    marks: list[tuple[int, int, float]] = field(default_factory=list)  # (rounds, bytes, time)

    def mark(self, rounds: int, counted: int) -> None:
        self.marks.append((rounds, counted, time.monotonic()))

    def between(self, first: int, last: int) -> tuple[int, int, int] | None:
        """(bytes, a, b): bytes counted from a sample once round ``a`` >= ``first`` was
        done to one when round ``b`` <= ``last`` was: the traffic of rounds a+1 .. b."""
        pairs = zip(self.marks, self.marks[1:], strict=False)
        quiet = [m for m, after in pairs if m[1] == after[1]]
        for pool in (quiet, self.marks):
            start = next((m for m in pool if m[0] >= first), None)
            end = next((m for m in reversed(pool) if m[0] <= last), None)
            if start is not None and end is not None and end[0] > start[0]:
                return end[1] - start[1], start[0], end[0]
        return None


class Lines:
    """A JSON-lines file read as it grows (only whole new lines, each once)."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.rows = path, 0, []

    def read(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except FileNotFoundError:
            return self.rows
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            self.rows.append(json.loads(line))
        self.offset += end
        return self.rows


def _env(home: Path) -> dict[str, str]:
    return home_env(home, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO), COMPUTESHARE_PIN=PIN,
                    GLOO_SOCKET_IFNAME="eth0")


def _tail(path: Path, size: int = 2000) -> str:
    """The end of a log file (stderr goes to files: a full pipe would stall the process)."""
    try:
        return path.read_bytes()[-size:].decode(errors="replace")
    except OSError:
        return ""


def run_cs(lan: ShapedLan, spec: Spec, work: Path) -> dict[str, Any]:
    """A hub in namespace "hub" and ``spec.workers`` CLI workers; the measured rounds."""
    out, env = work / "out", _env(work / "home")
    hub = lan.popen("hub", [*CLI, "host", "--bind", "0.0.0.0", "--port", str(PORT),
                            "--workers", str(spec.workers), "--rounds", str(spec.steps),
                            "--model", spec.model, "--batch-size", str(spec.batch),
                            "--pin", PIN, "--no-advertise", "--out", str(out),
                            "--eval-every", "0", "--quiet",
                            "--snapshot-every", str(spec.snapshot_every), *spec.args],
                    env=env, stdout=subprocess.DEVNULL, stderr=(work / "hub.err").open("wb"))
    started = time.monotonic()
    while not (out / "session.json").exists() and hub.poll() is None:
        time.sleep(POLL_S)
    workers = [lan.popen(f"w{i}", [*CLI, "join", f"{lan.address('hub')}:{PORT}", "--device",
                                   "cpu", "--threads", "1", "--quiet", "--name", f"w{i}",
                                   "--wait", "60"],
                         env=env, stdout=subprocess.DEVNULL,
                         stderr=(work / f"w{i}.err").open("wb"))
               for i in range(1, spec.workers + 1)]
    watch, metrics = Watch(), Lines(out / "metrics.jsonl")
    counter = lan.counter("hub")  # every message crosses the hub's link
    stopped_early = False
    while hub.poll() is None:
        records = metrics.read()
        rounds = sum(1 for r in records if r.get("type") == "round")
        watch.mark(rounds, counter.read())
        steady = rounds - _warmup(records)
        elapsed = time.monotonic() - started
        if (elapsed > spec.budget_s and steady >= spec.min_steady) or \
                (elapsed > 3 * spec.budget_s and steady >= 1) or elapsed > 6 * spec.budget_s:
            stopped_early = True
            break
        time.sleep(POLL_S)
    stop([hub, *workers], signal.SIGTERM)  # (SIGINT is ignored when run in the background)
    counter.close()
    err = _tail(work / "hub.err")
    records = Lines(out / "metrics.jsonl").read()
    # Requests a worker sent again after a timeout: its log says "retrying" for each.
    resent = sum((work / f"w{i}.err").read_text(errors="replace").count("retrying in")
                 for i in range(1, spec.workers + 1))
    return {"spec": asdict(spec), "key": spec.key, "stopped_early": stopped_early,
            "resent": resent,
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
        "--min-steps", str(2 + spec.min_steady),  # the first 2 build DDP's buckets
        "--out", str(work / "ddp")], env=env, stdout=subprocess.DEVNULL,
        stderr=(work / f"rank{r}.err").open("wb")) for r in range(spec.workers)]
    started = time.monotonic()
    watch, log = Watch(), Lines(work / "ddp" / "steps.jsonl")
    while procs[0].poll() is None and time.monotonic() - started < 6 * spec.budget_s + 120:
        steps = sum(1 for r in log.read() if "step" in r)
        watch.mark(steps, lan.all_tx_bytes())  # no hub: what every rank sent
        time.sleep(4 * POLL_S)
    stop(procs, signal.SIGTERM)
    err = _tail(work / "rank0.err")
    return {"spec": asdict(spec), "key": spec.key, "records": log.read(),
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
        "rounds": len(steady), "round_s": median(seconds),
        "compute_s": median(compute),
        "comm_s": median(s - c for s, c in zip(seconds, compute, strict=True)),
        "samples_per_s": samples / sum(seconds),
        "steps_per_round": median(r.get("steps", 1) for r in steady),
        "bytes_per_round": median(r["bytes_in"] + r["bytes_out"] for r in steady),
        "bytes_per_step": app / max(1, sum(r.get("steps", 1) for r in steady)),
        "wire_over_app": wire_ratio,
        "resent": result.get("resent"),  # requests sent again after a timeout (None: not counted)
        # every byte the hub's messages carried over the payloads the rounds needed (one
        # push and one model per worker): a request sent twice would show here
        "app_over_payload": (app / payload) if (payload := sum(
            r.get("payload_bytes", 0) for r in steady)) else None,
        "app_bytes_per_round": app / len(steady),
        "busy": median(r["busy"] for r in steady),
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
    step_s = median(seconds)
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
