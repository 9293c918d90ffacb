"""The cores and their tests do not need Qt: run them with PySide6 and pyqtgraph blocked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def qt_blocked(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import PySide6`` / ``import pyqtgraph`` fail."""
    for name in ("PySide6", "pyqtgraph"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError('{name} is blocked for this test')\n", encoding="utf-8")
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path}


def test_cores_and_cli_import_without_qt(qt_blocked):
    code = ("import computeshare_desktop.cli.main, computeshare_desktop.hub, "
            "computeshare_desktop.worker, computeshare_desktop.discovery, "
            "computeshare_desktop.transport, sys; "
            "assert 'PySide6' not in sys.modules or sys.modules['PySide6'] is None; "
            "assert 'datasets' not in sys.modules; "  # the hf extra: read on first use
            "import importlib.util as u; assert u.find_spec('PySide6') is not None")
    proc = subprocess.run([sys.executable, "-c", code], env=qt_blocked, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    blocked = subprocess.run([sys.executable, "-c", "import PySide6"], env=qt_blocked,
                             capture_output=True, text=True, timeout=60)
    assert blocked.returncode != 0 and "blocked for this test" in blocked.stderr


def test_core_tests_pass_and_gui_tests_skip_without_qt(qt_blocked):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:pytest-qt", "-p", "no:cacheprovider",
         "tests/protocol", "tests/codec", "tests/test_architecture.py", "tests/ui"],
        env=qt_blocked, cwd=ROOT, capture_output=True, text=True, timeout=600)
    tail = proc.stdout[-2000:]
    assert proc.returncode == 0, tail + proc.stderr[-2000:]
    assert " passed" in tail and " skipped" in tail and "failed" not in tail
