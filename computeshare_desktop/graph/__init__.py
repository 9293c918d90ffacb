"""A model shipped as a checked graph, never as code or pickle.

The hub exports the user's module (``export_training_graph``); a worker checks the graph's
JSON against an allow-list and a strict schema before any of it reaches torch, then rebuilds
a module that trains from it and raw tensors (``load_training_graph``). The hub's eval-mode
``trained_model.pt2`` comes from ``export_inference_program``. A pure layer: torch, msgspec,
nothing from the hub, the worker or the service.
"""

from computeshare_desktop.graph.base import (
    GraphRefused,
    TensorSpec,
    graph_fingerprint,
    release,
    require_release,
    torch_release,
)
from computeshare_desktop.graph.checks import CheckedProgram, check_program
from computeshare_desktop.graph.export import TrainingGraph, export_training_graph, frozen_norms
from computeshare_desktop.graph.inference import (
    eval_module_from_program,
    export_inference_program,
    program_module,
)
from computeshare_desktop.graph.loader import GraphModel, load_training_graph

__all__ = [
    "CheckedProgram",
    "GraphModel",
    "GraphRefused",
    "TensorSpec",
    "TrainingGraph",
    "check_program",
    "eval_module_from_program",
    "export_inference_program",
    "export_training_graph",
    "frozen_norms",
    "graph_fingerprint",
    "load_training_graph",
    "program_module",
    "release",
    "require_release",
    "torch_release",
]
