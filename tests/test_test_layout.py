"""The tests' own layout: no test module imports another (what two test files share lives in
tests/helpers/, imported as ``helpers.X``), and every file under tests/ is named for what it
tests, never for the round of work that wrote it (polish, fix_, pass4, issue, trial, a
trailing number)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# a word of a round of work, or a number at the end of a module's name (test_ui_polish4.py)
ROUND_WORDS = re.compile(r"polish|fix_|pass\d|issue|trial")
TRAILING_NUMBER = re.compile(r"[a-z_]\d+$")


def imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, top-level module) of every absolute import in ``source``, those inside
    functions and classes too."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def cross_imports(root: Path) -> list[str]:
    """``file:line imports module`` for each test module under ``root`` that imports a
    test module."""
    modules = {path.stem for path in root.rglob("test_*.py")}
    return [f"{path.relative_to(root)}:{line} imports {module}"
            for path in sorted(root.rglob("test_*.py"))
            for line, module in imported_modules(path.read_text(encoding="utf-8"))
            if module in modules]


def named_for_a_round(root: Path) -> list[str]:
    """The files under ``root`` whose names carry a round of work."""
    return [str(path.relative_to(root)) for path in sorted(root.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts
            and (ROUND_WORDS.search(path.name)
                 or (path.suffix == ".py" and TRAILING_NUMBER.search(path.stem)))]


def test_no_test_module_imports_another():
    assert cross_imports(TESTS) == []


def test_no_file_is_named_for_a_round_of_work():
    assert named_for_a_round(TESTS) == []


def test_the_checks_find_what_they_forbid(tmp_path: Path):
    (tmp_path / "ui").mkdir()
    (tmp_path / "test_a.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "ui" / "test_b.py").write_text(
        "from helpers.ui import click\n\n\ndef test_b():\n    import test_a\n", encoding="utf-8")
    (tmp_path / "test_c.py").write_text("from test_a import X\n", encoding="utf-8")
    assert cross_imports(tmp_path) == ["test_c.py:1 imports test_a",
                                       "ui/test_b.py:5 imports test_a"]
    for name in ("test_ui_polish.py", "test_ui_fix_visual.py", "test_pass4.py",
                 "test_issue_20.py", "test_trial_run.py", "test_ui_progress_polish4.py",
                 "test_windows2.py"):
        (tmp_path / name).write_text("", encoding="utf-8")
    (tmp_path / "screen-1280x720.json").write_text("{}", encoding="utf-8")  # a size, not a round
    assert named_for_a_round(tmp_path) == [
        "test_issue_20.py", "test_pass4.py", "test_trial_run.py", "test_ui_fix_visual.py",
        "test_ui_polish.py", "test_ui_progress_polish4.py", "test_windows2.py"]
