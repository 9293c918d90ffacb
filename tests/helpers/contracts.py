"""The import contracts (pyproject's [tool.importlinter]) checked by lint-imports, on this
project or on a copy of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the project: tests/helpers/ is two below
# The console script `lint-imports`, run by the interpreter that runs the tests (portable:
# no PATH, no Scripts/ vs bin/).
LINT = "import sys; from importlinter.cli import lint_imports_command; " \
       "sys.exit(lint_imports_command())"


def lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports on ``project`` (a folder holding pyproject.toml and the package)."""
    return subprocess.run([sys.executable, "-c", LINT, "--no-cache", "--no-logo"],
                          cwd=project, capture_output=True, text=True, timeout=120)

