"""The house rules of the package layout, checked on the source (an import-linter in brief).

One package per side effect: zmq only in transport/, zeroconf only in discovery/, PySide6
only in gui/; nothing on the network path may unpickle. The layers, bottom up:

    events, defaults, protocol, codec, data, models   pure
    hub, worker                                       the cores: no sockets, no UI
    transport, discovery                              sockets; the hub only through hub.endpoint
    service                                           threads and policy: hosting, joining
    cli, gui, selftest                                views: they drive the service
"""

from __future__ import annotations

import ast
from pathlib import Path

import computeshare_desktop

ROOT = Path(computeshare_desktop.__file__).parent
ONLY_IN = {"zmq": "transport", "zeroconf": "discovery", "PySide6": "gui", "pyqtgraph": "gui"}
NEVER = {"pickle", "dill", "cloudpickle", "marshal", "shelve"}
# files the user chose (or the hub wrote), never peers
TORCH_LOAD_ALLOWED = {"hub/outputs.py", "evaluation.py"}


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


def test_side_effect_libraries_stay_in_their_package():
    offenders = [(rel, lib) for rel, tree in _modules() for lib in _imports(tree)
                 if lib in ONLY_IN and rel.split("/")[0] != ONLY_IN[lib]]
    assert offenders == []


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


def _relative_imports(tree: ast.Module, rel: str) -> set[str]:
    """The package modules a module imports, as dotted paths from the package root."""
    here = rel.split("/")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            base = here[:len(here) - (node.level - 1)] if node.level > 1 else here
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith("computeshare_desktop."):
            found.add(node.module.removeprefix("computeshare_desktop."))
    return found


# Who may not import whom (by the first part of the dotted path, or a whole module).
FORBIDDEN = {
    "events": ("protocol", "codec", "hub", "worker", "transport", "discovery", "service",
               "cli", "gui"),
    "protocol": ("hub", "worker", "transport", "discovery", "service", "cli", "gui"),
    "codec": ("hub", "worker", "transport", "discovery", "service", "cli", "gui"),
    "data": ("hub", "worker", "transport", "discovery", "service", "cli", "gui"),
    "models": ("hub", "worker", "transport", "discovery", "service", "cli", "gui"),
    "hub": ("worker", "transport", "discovery", "service", "cli", "gui"),
    "worker": ("hub", "transport", "discovery", "service", "cli", "gui"),
    "transport": ("hub.core", "hub.session", "hub.schedule", "hub.trainer", "discovery",
                  "service", "cli", "gui"),
    "discovery": ("hub.core", "hub.session", "hub.schedule", "hub.trainer", "transport",
                  "service", "cli", "gui"),
    "service": ("cli", "gui"),
    "cli": ("gui", "transport", "hub.core", "hub.session", "worker.session"),
    "gui": ("cli", "transport", "hub.core", "hub.session", "worker.session"),
    # the self-test drives what the app runs: the service, discovery and (lazily) gui.app
    "selftest": ("cli", "transport", "hub.core", "hub.session", "worker.session"),
}


def test_each_layer_imports_only_the_layers_below_it():
    offenders = []
    for rel, tree in _modules():
        layer = rel.removesuffix(".py").split("/")[0]
        for target in _relative_imports(tree, rel):
            for banned in FORBIDDEN.get(layer, ()):
                if target == banned or target.startswith(banned + "."):
                    offenders.append((rel, target))
    assert offenders == []


def test_the_rules_catch_a_view_that_reaches_past_the_service():
    """The check itself works: a GUI module importing the transport is caught."""
    tree = ast.parse("from ..transport import HubServer\nfrom ..service import HostService")
    assert "transport" in _relative_imports(tree, "gui/x.py")
    assert "service.HostService" in _relative_imports(tree, "gui/x.py")


def test_the_torch_floor_is_past_the_known_weights_only_bypasses():
    """Checkpoints and models are read with torch.load(weights_only=True); versions up to
    2.9.1 could be made to run code that way (CVE-2025-32434, CVE-2026-24747)."""
    import re
    import tomllib
    from pathlib import Path

    import torch

    pyproject = Path(__file__).parents[1] / "pyproject.toml"
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    floor = next(d for d in project["project"]["dependencies"] if d.startswith("torch>="))
    version = tuple(int(x) for x in re.findall(r"\d+", floor.split(">=")[1])[:2])
    assert version >= (2, 10), floor
    installed = tuple(int(x) for x in re.findall(r"\d+", torch.__version__)[:2])
    assert installed >= version
