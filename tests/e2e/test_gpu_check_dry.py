"""The GPU check's dry run: ``python -m benchmarks.gpu_check --device cpu`` runs every session of
the GPU check small on the CPU (a hub and two real ``computeshare join`` processes each,
then the plain loop), exits 0, and writes a JSON record a person can trust: every session,
both workers on the CPU in the precision the CPU resolves, an accuracy above the bar, and
finite, positive figures. So the script the GPU run needs cannot rot."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]  # `benchmarks` is a package there
SESSIONS = {"torchvision", "builtin", "own-pt2", "fp16"}


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str],
                                                               dict]:
    out = tmp_path_factory.mktemp("gpu-check")
    done = subprocess.run([sys.executable, "-m", "benchmarks.gpu_check", "--device", "cpu",
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=280)
    summary = out / "gpu_check.json"
    record = json.loads(summary.read_text(encoding="utf-8")) if summary.exists() else {}
    return done, record


@pytest.mark.timeout(300)
def test_the_dry_run_passes_every_session(dry_run) -> None:
    done, record = dry_run
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert record["device"] == "cpu" and record["failures"] == []
    assert {s["session"] for s in record["sessions"]} == SESSIONS
    assert "| torchvision |" in done.stdout and "| passed |" in done.stdout.splitlines()[0]


@pytest.mark.timeout(300)
def test_each_session_records_cpu_workers_an_accuracy_and_sane_numbers(dry_run) -> None:
    _, record = dry_run
    for session in record["sessions"]:
        name = session["session"]
        assert "error" not in session, session
        assert session["accuracy"] >= session["bar"] > 0.25, name  # 4 classes: chance 25%
        assert session["rounds"] == session["round_records"] == record["size"]["rounds"]
        assert _positive(session["bytes_per_round"]), name
        assert session["nonfinite_round_losses"] == 0 and session["hub_eval_device"] == "cpu"
        shares = [w["share"] for w in session["workers"].values()]
        assert all(_positive(s) for s in shares) and math.isclose(sum(shares), 1.0), name
        for role, worker in session["workers"].items():
            probe = worker["probe"]
            assert worker["exit_code"] == 0 and worker["cuda_errors"] == [], (name, role)
            assert probe["device"] == "cpu" and probe["precision"] == "fp32", (name, role)
            assert probe["errors"] == [] and probe["syncs"] is None, (name, role)
            assert probe["steps"] >= session["rounds"] - 1, (name, role)  # one may be late
            assert worker["hub_says_device"].startswith("CPU"), (name, role)
            assert _positive(worker["samples_per_s"]), (name, role)
        loop = session["loop"]
        assert loop["device"] == "cpu" and loop["precision"] == "fp32"
        assert loop["batch"] == session["workers"]["main"]["batch"]
        assert _positive(loop["samples_per_s"]) and math.isfinite(session["overhead"])
    fp16 = next(s for s in record["sessions"] if s["session"] == "fp16")
    assert "fp16 is for GPUs" in fp16["workers"]["main"]["probe"]["precision_note"]
