"""A canary for hostile graphs: any payload that runs calls ``trip``, which leaves a mark.

The hostile graphs of ``test_graph_hostile.py`` reference this module by name (through
``__import__``, pickle's ``__reduce__`` or an attribute planted on ``torch``), so the mark
appears exactly when some loader executed what a peer sent.
"""

from __future__ import annotations

import os
from pathlib import Path

MARK = "GRAPH_CANARY"  # environment variable: the file trip() writes
calls: list[str] = []


def trip(first: object = None, *_: object) -> object:
    """Record the call and write the mark file; return the first argument (a tensor when
    called as a graph op, so the forward would carry on)."""
    calls.append(repr(first)[:40])
    path = os.environ.get(MARK)
    if path:
        Path(path).write_text("the hostile payload ran\n", encoding="utf-8")
    return first


class Payload:
    """Unpickling this calls trip(): the stand-in for a pickled constant."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return trip, ("pickle",)
