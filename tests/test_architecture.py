"""The house rules that import-linter cannot say, and a check that its contracts bite.

The layers (views, service, transports, cores, pure code), the one package for each
side-effect library and the absence of import circles are import-linter contracts in
pyproject.toml, run by ``tests/test_import_contracts.py``. What stays here reads calls, not
imports: nothing on the network path may unpickle, and ``torch.load`` reads only files the
user chose. The last tests break each kind of contract in a copy of the package and check
that lint-imports says so.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

import computeshare_desktop
from helpers.contracts import ROOT as PROJECT
from helpers.contracts import lint_imports

ROOT = Path(computeshare_desktop.__file__).parent
NEVER = {"pickle", "dill", "cloudpickle", "marshal", "shelve"}
# files the user chose (or the hub wrote), never peers
TORCH_LOAD_ALLOWED = {"hub/outputs.py", "evaluation.py",
                      # --weights: the state_dict file the user chose on the hub, or
                      # torchvision's pretrained file in the local torch hub cache
                      "models/weights.py"}
# torch.export.load unpickles what the archive asks for (FACTS: torch.export): only the
# user's own programs, on the hub (--model PATH.pt2) or for evaluate/predict; a worker gets
# a graph through graph/'s strict loader instead
EXPORT_LOAD_ALLOWED = {"models/program.py", "evaluation.py"}


def _modules() -> list[tuple[str, ast.Module]]:
    return [(p.relative_to(ROOT).as_posix(), ast.parse(p.read_text(encoding="utf-8"), str(p)))
            for p in sorted(ROOT.rglob("*.py"))]


def _imports(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_nothing_unpickles():
    offenders = [(rel, lib) for rel, tree in _modules() for lib in _imports(tree) & NEVER]
    calls = [rel for rel, tree in _modules() for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr in ("recv_pyobj", "loads")
             and isinstance(node.value, ast.Name) and node.value.id == "pickle"]
    assert offenders == [] and calls == []


def test_torch_load_only_reads_files_the_user_chose():
    users = {rel for rel, tree in _modules() for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr == "load"
             and isinstance(node.value, ast.Name) and node.value.id == "torch"}
    assert users <= TORCH_LOAD_ALLOWED


def test_torch_export_load_only_reads_the_users_own_programs():
    users = {rel for rel, tree in _modules() for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr == "load"
             and ast.unparse(node.value) == "torch.export"}
    hidden = [rel for rel, tree in _modules() for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module == "torch.export"
              and any(a.name == "load" for a in node.names)]
    assert users <= EXPORT_LOAD_ALLOWED and hidden == []
    assert users == EXPORT_LOAD_ALLOWED  # the check sees the calls it allows


def test_the_torch_floor_is_past_the_known_weights_only_bypasses():
    """Checkpoints and models are read with torch.load(weights_only=True); versions up to
    2.9.1 could be made to run code that way (CVE-2025-32434, CVE-2026-24747)."""
    import re
    import tomllib

    import torch

    pyproject = PROJECT / "pyproject.toml"
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    floor = next(d for d in project["project"]["dependencies"] if d.startswith("torch>="))
    version = tuple(int(x) for x in re.findall(r"\d+", floor.split(">=")[1])[:2])
    assert version >= (2, 10), floor
    installed = tuple(int(x) for x in re.findall(r"\d+", torch.__version__)[:2])
    assert installed >= version


# ----------------------------------------------------------------- the contracts bite
@pytest.fixture(scope="module")
def copy_of_the_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package and pyproject.toml in a folder of their own (lint-imports reads the
    package it finds there first)."""
    project = tmp_path_factory.mktemp("project")
    shutil.copy2(PROJECT / "pyproject.toml", project / "pyproject.toml")
    shutil.copytree(ROOT, project / "computeshare_desktop",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return project


# (module to change, the line added, the contract that must break)
VIOLATIONS = [
    ("gui/formatting.py", "from ..transport import HubServer", "Views use the service"),
    ("cli/terminal.py", "from ..gui import formatting", "Views drive the service"),
    ("hub/rounds.py", "from ..worker import options", "Views drive the service"),
    ("protocol/brand_new.py", "from ..hub import HubConfig", "Views drive the service"),
    ("discovery/advert.py", "from ..hub import core", "through its narrow interface"),
    ("service/host.py", "from ..hub.rounds import Round", "Rounds and members stay inside"),
    ("hub/presets.py", "import zmq", "zmq only in transport/"),
    ("service/threads.py", "from PySide6 import QtCore", "Qt (PySide6, pyqtgraph) only in gui/"),
    ("codec/base.py", "from . import raw", "No import circles"),
    ("gui/progress_rows.py", "if TYPE_CHECKING:\n    from .progress_state import ProgressState",
     "No import circles"),  # a circle through annotations only is still one
]


@pytest.mark.parametrize("module, line, contract", VIOLATIONS,
                         ids=[f"{m}: {line}" for m, line, _ in VIOLATIONS])
def test_each_kind_of_contract_catches_a_violation(copy_of_the_project, module, line, contract):
    path = copy_of_the_project / "computeshare_desktop" / module
    before = path.read_text(encoding="utf-8") if path.exists() else None
    path.write_text(f"{before or ''}\nfrom typing import TYPE_CHECKING\n{line}\n",
                    encoding="utf-8")
    try:
        proc = lint_imports(copy_of_the_project)
    finally:
        if before is None:
            path.unlink()
        else:
            path.write_text(before, encoding="utf-8")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    broken = proc.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, proc.stdout


def test_the_untouched_copy_keeps_every_contract(copy_of_the_project):
    """So the failures above come from the line each one added."""
    proc = lint_imports(copy_of_the_project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
