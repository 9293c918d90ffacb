"""Under ``pytest -n 2`` a test marked ``alone`` runs while no other test runs (real xdist
workers on a small suite written here), and without the mark the two overlap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock: POSIX only")

CONFTEST = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from helpers.machine_share import pytest_runtest_protocol  # noqa: F401
"""
TIMED = """
import json, os, time
import pytest

def _timed(name, seconds):
    start = time.monotonic()
    time.sleep(seconds)
    with open(os.environ["SPANS"], "a") as fh:
        fh.write(json.dumps([name, start, time.monotonic()]) + "\\n")
"""


def spans(tmp_path: Path, mark: str) -> dict[str, list[tuple[float, float]]]:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_alone.py").write_text(
        TIMED + f"\n{mark}\ndef test_alone():\n    _timed('alone', 1.0)\n", encoding="utf-8")
    (tmp_path / "test_others.py").write_text(
        TIMED + "".join(f"\ndef test_{i}():\n    _timed('other', 0.25)\n" for i in range(8)),
        encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    alone: runs alone\n", encoding="utf-8")
    out = tmp_path / "spans.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "2", "--dist", "loadfile", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SPANS": str(out)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    found: dict[str, list[tuple[float, float]]] = {"alone": [], "other": []}
    for line in out.read_text(encoding="utf-8").splitlines():
        name, start, end = json.loads(line)
        found[name].append((start, end))
    return found


def overlaps(found: dict[str, list[tuple[float, float]]]) -> bool:
    (a_start, a_end), = found["alone"]
    return any(start < a_end and a_start < end for start, end in found["other"])


def test_an_alone_test_runs_while_no_other_test_does(tmp_path):
    found = spans(tmp_path, "@pytest.mark.alone")
    assert len(found["other"]) == 8 and not overlaps(found), found


def test_without_the_mark_the_two_workers_overlap(tmp_path):
    assert overlaps(spans(tmp_path, ""))
