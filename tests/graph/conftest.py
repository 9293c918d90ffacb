"""Fixtures of the graph tests: one exported network, the canary, and guards that record
any call to a loader that executes or unpickles."""

from __future__ import annotations

import builtins
import pickle
from collections.abc import Iterator
from pathlib import Path

import graph_canary
import pytest
import sympy
import torch
from graph_nets import tiny_resnet
from torch._export.serde import serialize as torch_serialize

from computeshare_desktop.graph import TrainingGraph, export_training_graph

EXAMPLE_SHAPE = (4, 3, 16, 16)


@pytest.fixture(autouse=True, scope="session")
def no_tqdm_monitor() -> Iterator[None]:
    """torch.fx's Interpreter (run by export) opens a disabled tqdm bar, and tqdm starts a
    process-wide monitor thread the first time, which the suite's leak check would count:
    tqdm starts none with an interval of 0."""
    import tqdm

    before = tqdm.tqdm.monitor_interval
    tqdm.tqdm.monitor_interval = 0
    yield
    tqdm.tqdm.monitor_interval = before


@pytest.fixture(scope="session")
def exported() -> tuple[torch.nn.Module, TrainingGraph]:
    """The stranger's network (as it was when exported) and its training graph."""
    model = tiny_resnet()
    graph = export_training_graph(model, torch.randn(EXAMPLE_SHAPE))
    return model, graph


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The file a hostile payload would write if it ran; checked absent after the test."""
    mark = tmp_path / "canary"
    monkeypatch.setenv(graph_canary.MARK, str(mark))
    graph_canary.calls.clear()
    yield mark
    graph_canary.calls.clear()


_GUARDED = [  # (owner, attribute): calls that run or unpickle a peer's data
    (pickle, "loads"), (pickle, "load"), (torch, "load"), (torch.export, "load"),
    (sympy, "sympify"), (torch_serialize.sympy, "sympify"),
    (torch_serialize.ExportedProgramDeserializer, "deserialize"),
    (torch_serialize.GraphModuleDeserializer, "deserialize"),
]


@pytest.fixture
def unsafe_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace every loader that could run a peer's payload with a recorder; the test
    asserts the list stays empty. exec/eval are recorded only for source text (imports
    exec code objects)."""
    calls: list[str] = []

    def recorder(name: str):
        def record(*args: object, **kwargs: object) -> None:
            calls.append(name)
            raise AssertionError(f"{name} called while loading a hostile graph")
        return record

    for owner, attribute in _GUARDED:
        monkeypatch.setattr(owner, attribute, recorder(f"{owner.__name__}.{attribute}"))
    if hasattr(torch._C, "_pickle_load_obj"):
        monkeypatch.setattr(torch._C, "_pickle_load_obj", recorder("_pickle_load_obj"))
    for name in ("exec", "eval"):
        original = getattr(builtins, name)

        def guarded(source: object, *rest: object, _name: str = name,
                    _original: object = original) -> object:
            if isinstance(source, str | bytes):
                calls.append(_name)
                raise AssertionError(f"{_name} of source text while loading a graph")
            return _original(source, *rest)  # type: ignore[operator]

        monkeypatch.setattr(builtins, name, guarded)
    return calls
