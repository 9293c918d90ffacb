"""``computeshare demo`` as a subprocess: its wall time, final accuracy, and when it first
reached the target accuracy."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from benchmarks._common import kill, read_jsonl
from benchmarks.targets import CORE

from .sessions import spawn


@dataclass
class DemoRun:
    label: str
    wall_s: float
    final_acc: float
    rounds: int
    first_95_poll_s: float | None  # launch -> eval line >= the target seen in metrics
    first_95_elapsed_s: float | None  # that eval's elapsed_s (since the hub session began)
    first_95_version: int | None
    startup_s: float | None  # launch -> hub session start, from the first record
    evals: list[dict[str, Any]]


def run_demo(label: str, extra: Sequence[str], root: Path, timeout_s: float) -> DemoRun:
    """``computeshare demo --quiet --out DIR EXTRA``, polling metrics.jsonl every 50 ms."""
    out = root / f"demo-{label}"
    out.mkdir(parents=True)
    start = time.monotonic()
    proc = spawn(["demo", "--quiet", "--out", str(out / "run"), *extra], out / "demo.log")
    seen_first = hit = None
    try:
        while proc.poll() is None:
            if time.monotonic() - start > timeout_s:
                raise RuntimeError(f"demo {label}: timed out after {timeout_s:.0f} s")
            now = time.monotonic() - start
            records = (read_jsonl(out / "run" / "metrics.jsonl")
                       if (seen_first is None or hit is None) else [])
            if records and seen_first is None:
                seen_first = (now, records[0]["elapsed_s"])
            if hit is None:
                hit = next(((now, r) for r in records if r.get("type") == "eval"
                            and r["accuracy"] >= CORE.demo_accuracy), None)
            time.sleep(0.05)
        wall = time.monotonic() - start
    finally:
        kill(proc)  # reaps the demo's own workers too, should any remain
    if proc.returncode != 0:
        raise RuntimeError(f"demo {label}: exit code {proc.returncode}; see {out / 'demo.log'}")
    records = read_jsonl(out / "run" / "metrics.jsonl")
    evals = [r for r in records if r.get("type") == "eval"]
    rounds = sum(r.get("type") == "round" for r in records)
    if hit is None:  # crossed in an eval written after the last poll: exit time bounds it
        late = next((r for r in evals if r["accuracy"] >= CORE.demo_accuracy), None)
        hit = (wall, late) if late else None
    startup = seen_first[0] - seen_first[1] if seen_first else None
    return DemoRun(label, wall, evals[-1]["accuracy"], rounds,
                   hit[0] if hit else None, hit[1]["elapsed_s"] if hit else None,
                   hit[1]["version"] if hit else None, startup, evals)

