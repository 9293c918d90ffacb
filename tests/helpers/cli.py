"""The ``computeshare`` command run in the test's own process.

Not a test module: tests import it from the helpers package (pyproject puts tests/ on pythonpath).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from computeshare_desktop.cli.main import main


def run_cli(argv: Sequence[str]) -> int:
    """``computeshare ARGV`` through the CLI's ``main``: its exit code. The root logger's
    handlers and level are put back after, since ``main`` installs its own (pytest's log
    capture is among them)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        return main(list(argv))
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
