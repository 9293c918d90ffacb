"""Lint and types are part of the suite: ruff and mypy must be clean on the package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, text=True,
                          capture_output=True, timeout=600)


def test_ruff_is_clean() -> None:
    proc = _run("ruff", "check", "computeshare_desktop", "tests", "benchmarks", "testbed")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean() -> None:
    proc = _run("mypy", "computeshare_desktop")
    assert proc.returncode == 0, proc.stdout + proc.stderr
