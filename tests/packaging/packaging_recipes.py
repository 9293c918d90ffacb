"""The installer recipes in packaging/, imported as build.py imports them."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

PACKAGING = Path(__file__).resolve().parents[2] / "packaging"


def recipe(name: str) -> ModuleType:
    """packaging/``name``.py. packaging/ is not a package (it would shadow PyPA's
    `packaging`): the recipes import `common` as build.py runs them, with packaging/ on
    sys.path."""
    if str(PACKAGING) not in sys.path:
        sys.path.insert(0, str(PACKAGING))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(PACKAGING))
