"""``PATH.py:NAME``: a model defined in the user's own Python file, built on the hub only.

The file is the user's code and runs on the hub (never on a worker, which gets a checked
graph). It is imported under a module name of its own each time, with its folder on
``sys.path`` only while it imports (so it can import a sibling file). ``NAME`` is an
``nn.Module`` subclass or a function that returns a module; it is called with the keyword
arguments it accepts among those the dataset offers (``checks.builder_arguments``).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import itertools
import re
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from torch import nn

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models.checks import first_lines

_numbers = itertools.count()
# sys.path and sys.modules are the process's: two imports must not interleave their edits.
_import_lock = threading.Lock()


def build_from_file(path: Path, name: str, offered: dict[str, object]) -> nn.Module:
    """Import ``path`` and build its ``name`` with the arguments it takes from ``offered``.

    Raises:
        ConfigError: no such file; the import fails (its first lines); no ``name`` in it
            (the message lists the module classes and functions it defines); ``name`` is
            neither an ``nn.Module`` class nor a function; it needs an argument outside
            ``offered``; the call fails; or it returns something else than a module.
    """
    label = f"{path.name}:{name}"
    target = _definition(import_user_file(path), path, name)
    kwargs = _arguments(target, label, offered)
    call = f"{label}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
    try:
        model = target(**kwargs)
    except Exception as exc:
        raise ConfigError(f"{call} failed:\n{first_lines(exc)}") from exc
    if not isinstance(model, nn.Module):
        raise ConfigError(f"{call} returned a {type(model).__name__}, not an nn.Module")
    return model


def import_user_file(path: Path) -> ModuleType:
    """Run the file as a new module (a new name each time, so an edited file is read again).

    Raises:
        ConfigError: the file does not exist, or importing it raised.
    """
    if not path.is_file():
        raise ConfigError(f"model file {path} does not exist")
    stem = re.sub(r"\W", "_", path.stem)
    module_name = f"computeshare_user_model_{next(_numbers)}_{stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{path} cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    with _import_lock:
        sys.path.insert(0, folder)
        # Registered while it runs, as any import is: dataclasses and typing look it up.
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:
            del sys.modules[module_name]
            raise ConfigError(f"importing {path} failed:\n{first_lines(exc)}") from exc
        finally:
            _forget_folder(folder)
    return module


def _forget_folder(folder: str) -> None:
    if sys.path and sys.path[0] == folder:
        del sys.path[0]
    elif folder in sys.path:  # the file moved our entry; take out one all the same
        sys.path.remove(folder)


def _definition(module: ModuleType, path: Path, name: str) -> Any:
    label = f"{path.name}:{name}"
    if not hasattr(module, name):
        defined = _defined(module)
        listing = (f"it defines {', '.join(defined)}" if defined
                   else "it defines no nn.Module class or function")
        raise ConfigError(f"{path} has no {name!r}; {listing}")
    target = getattr(module, name)
    if isinstance(target, type) and issubclass(target, nn.Module):
        return target
    if isinstance(target, nn.Module):
        raise ConfigError(f"{label} is a model instance; name its class, or a function that "
                          f"builds it, so the hub builds it for the dataset and the seed")
    if callable(target) and not isinstance(target, type):
        return target
    raise ConfigError(f"{label} is a {type(target).__name__}, not an nn.Module class or a "
                      f"function that returns one")


def _defined(module: ModuleType) -> list[str]:
    """The module classes and the functions the file itself defines, as "Net (class)"."""
    found = []
    for key, value in vars(module).items():
        if key.startswith("_") or getattr(value, "__module__", None) != module.__name__:
            continue
        if isinstance(value, type) and issubclass(value, nn.Module):
            found.append(f"{key} (nn.Module class)")
        elif inspect.isfunction(value):
            found.append(f"{key} (function)")
    return found


def _arguments(target: Any, label: str, offered: dict[str, object]) -> dict[str, object]:
    """The keyword arguments ``target`` accepts among ``offered`` (all of them for
    ``**kwargs``).

    Raises:
        ConfigError: it requires a parameter that is not offered.
    """
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): call it bare
        return {}
    chosen: dict[str, object] = {}
    for p in parameters:
        if p.kind is p.VAR_KEYWORD:
            chosen.update(offered)
        elif p.name in offered and p.kind is not p.POSITIONAL_ONLY:
            chosen[p.name] = offered[p.name]
        elif p.default is p.empty and p.kind is not p.VAR_POSITIONAL:
            raise ConfigError(
                f"{label} needs an argument {p.name!r}, which ComputeShare cannot give: it "
                f"gives {', '.join(offered)} by name (give {p.name} a default in the file)")
    return chosen


def model_names(path: Path) -> list[str]:
    """The names ``PATH.py:NAME`` may take in ``path``, read from its syntax alone (nothing
    in the file runs): its top-level classes whose bases name a ``Module``, then its
    top-level functions, public ones only; the last class first (a file usually defines
    its blocks before the network). The Host dialog offers them after a file is chosen;
    the hub checks the choice when it builds the model.

    Raises:
        ConfigError: the file cannot be read or is not Python.
    """
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read as Python: {exc}") from None
    classes, functions = [], []
    for node in tree.body:
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef)) or node.name.startswith("_"):
            continue
        if isinstance(node, ast.ClassDef) and any(
                "Module" in ast.unparse(base) for base in node.bases):
            classes.append(node.name)
        elif isinstance(node, ast.FunctionDef):
            functions.append(node.name)
    return classes[::-1] + functions
