"""Soak, short: a real hub with 32 simulated workers and churn keeps its memory and descriptors.

The same script as the 10-minute soak (``python -m benchmarks.soak``, see
docs/BENCHMARKS-SOAK.md), run for 15 s, and on until every way of leaving has happened and
150 rounds were made after warm-up (a loaded machine heals churn and trains more slowly): a
``computeshare host`` process on 127.0.0.1, workers that pair, join, pull and push, and
goodbyes, rejoins, vanished and stalled workers all along.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="the soak reads the hub's memory and descriptors from "
                                        "/proc and ties it to its parent with prctl (Linux)")]
REPO = Path(__file__).resolve().parents[2]  # `benchmarks` is a package there


def run_soak(results: Path, *args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.soak", "--results", str(results),
                             *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:  # SIGTERM: the soak stops its hub (which also dies with it)
            proc.terminate()
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.timeout(600)
def test_hub_memory_and_descriptors_hold_under_churn(tmp_path):
    results = tmp_path / "soak.jsonl"
    done = run_soak(results, "--minutes", "0.25", "--churn-every", "2", "--every-churn",
                    "--min-rounds", "150", "--workers", "32", "--label", "pytest",
                    timeout_s=480)
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    record = json.loads(results.read_text(encoding="utf-8").splitlines()[-1])
    assert record["passed"] and all(record["checks"].values()), record["checks"]
    assert record["rss_growth_pct"] < 5.0
    assert record["end"]["fds"] <= record["warm"]["fds"]
    assert record["errors"] == []
    counts, log = record["counts"], record["hub_log"]
    assert all(counts[f"leave_{how}"] >= 1 for how in ("bye", "rejoin", "vanish", "stall"))
    assert counts["paired"] > 32 and counts["joined"] > counts["paired"]  # rejoins need no PIN
    assert log["left_goodbye"] >= 2 and log["left_silent"] >= 1 and log["left_stuck"] >= 1
    assert log["errors"] == 0
    assert record["end"]["version"] - record["warm"]["version"] > 100  # rounds kept going
