"""Loopback sessions: a real ``computeshare host`` and two ``computeshare join`` processes,
and the round statistics of their metrics."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from benchmarks._common import (CLI, free_ports, home_env, kill, median, read_jsonl,
                                wait_all)

from .plan import BATCH, DATASET, MODEL, PIN, WORKERS

PROCS: list[subprocess.Popen[bytes]] = []  # every process we started, for cleanup
# Keys of the benchmark's hub and workers go to a throwaway folder, not the user's own.
_HOME = tempfile.mkdtemp(prefix="computeshare-bench-home-")


def spawn(args: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m computeshare_desktop.cli ARGS`` in its own process group."""
    fh = open(log, "wb")
    proc = subprocess.Popen([*CLI, *args], stdout=fh, stderr=subprocess.STDOUT,
                            start_new_session=True,
                            env=home_env(_HOME, PYTHONUNBUFFERED="1"))
    fh.close()
    PROCS.append(proc)
    return proc


def cleanup() -> None:
    """Kill every process we started that is still there."""
    for proc in PROCS:
        if proc.poll() is None:
            kill(proc)
        else:  # the demo's workers share its group and may outlive it
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


@dataclass
class SessionRun:
    codec: str
    rep: int
    wall_s: float
    rounds: list[dict[str, Any]]
    out_dir: Path


def run_session(codec: str, rounds: int, rep: int, root: Path) -> SessionRun:
    """One ``host`` process plus two ``join`` processes until the session is done."""
    out = root / f"session-{codec}-{rep}"
    out.mkdir(parents=True)
    port = free_ports()
    start = time.monotonic()
    hub = spawn(["host", "--pin", PIN, "--bind", "127.0.0.1", "--port", str(port), "--workers",
                 str(WORKERS), "--rounds", str(rounds), "--batch-size", str(BATCH), "--codec",
                 codec, "--local-steps", "0", "--no-balance", "--eval-every", "0",
                 "--dataset", DATASET, "--model", MODEL,
                 "--out", str(out / "hub"), "--quiet", "--no-advertise"], out / "host.log")
    workers = [spawn(["join", f"127.0.0.1:{port}", "--pin", PIN, "--device", "cpu",
                      "--threads", "1", "--quiet", "--name", f"bench-{i + 1}",
                      "--wait", "60"],
                     out / f"worker{i + 1}.log") for i in range(WORKERS)]
    try:
        wait_all([hub, *workers], 60 + rounds * 0.5, f"{codec} session {rep}")
    finally:
        for proc in (hub, *workers):
            if proc.poll() is None:
                kill(proc)
    wall = time.monotonic() - start
    records = [r for r in read_jsonl(out / "hub" / "metrics.jsonl")
               if r.get("type") == "round"]
    if len(records) != rounds:
        raise RuntimeError(f"{codec} session {rep}: {len(records)} round records, not {rounds}")
    return SessionRun(codec, rep, wall, records, out / "hub")


@dataclass
class RoundStats:
    codec: str
    n: int
    round_s: list[float]
    compute_s: list[float]
    other_s: list[float]
    wire: list[int]
    bytes_in: list[int]
    bytes_out: list[int]
    rejected: int
    partial: int
    per_rep: list[tuple[int, float, float, float, float]] = field(default_factory=list)
    ckpt_other_s: list[float] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # the steady rounds


def round_stats(runs: Sequence[SessionRun], codec: str, warmup: int) -> RoundStats:
    mine = [r for r in runs if r.codec == codec]
    st = RoundStats(codec, 0, [], [], [], [], [], [], 0, 0)
    for run in mine:
        steady = run.rounds[warmup:]
        other = [r["seconds"] - r["compute_s"] for r in steady]
        st.per_rep.append((run.rep, median([r["seconds"] for r in steady]),
                           median([r["compute_s"] for r in steady]), median(other), run.wall_s))
        st.records += steady
        for r, o in zip(steady, other, strict=True):
            st.round_s.append(r["seconds"])
            st.compute_s.append(r["compute_s"])
            st.other_s.append(o)
            st.bytes_in.append(r["bytes_in"])
            st.bytes_out.append(r["bytes_out"])
            st.wire.append(r["bytes_in"] + r["bytes_out"])
            st.rejected += r["rejected"]
            st.partial += r["contributors"] != WORKERS
            # A checkpoint is written after closing version v (v % 50 == 0), before the next
            # round's model replies leave: it lands in round v + 1.
            if (r["round"] - 1) % 50 == 0:
                st.ckpt_other_s.append(o)
        st.n += len(steady)
    return st

