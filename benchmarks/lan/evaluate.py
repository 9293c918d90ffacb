"""Accuracy of the weights a run left behind: snapshots evaluated after the run, offline, so
that evaluation never competes with training for the CPU while it is being timed."""

from __future__ import annotations

from functools import cache
from typing import Any

import torch

from computeshare_desktop.data import load_dataset
from computeshare_desktop.evaluation import evaluate
from computeshare_desktop.models import build_model


@cache
def _test_set() -> Any:
    return load_dataset("mnist-sample", "test")


def accuracy(model_name: str, path: str) -> float:
    """Test accuracy of a saved state_dict."""
    test = _test_set()
    model = build_model(model_name, test.info)
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return evaluate(model, test)[0]


def curve(result: dict[str, Any]) -> list[tuple[int, float, float]]:
    """(steps, seconds since training started, test accuracy) of every snapshot of a run."""
    spec = result["spec"]
    records = result["records"]
    if spec["system"] == "ddp":
        shots = [(r["snapshot"], r["elapsed_s"], r["path"]) for r in records if "snapshot" in r]
        start = 0.0
    else:
        rounds = [r for r in records if r.get("type") == "round"]
        if not rounds:
            return []
        start = rounds[0]["elapsed_s"] - rounds[0]["seconds"]  # when round 1 opened
        shots = [(r["version"], r["elapsed_s"], r["path"]) for r in records
                 if r.get("type") == "snapshot"]
    return [(steps, elapsed - start, accuracy(spec["model"], path))
            for steps, elapsed, path in shots]


def time_to(points: list[tuple[int, float, float]], target: float) -> tuple[int, float] | None:
    """(steps, seconds) of the first snapshot at or above ``target`` accuracy."""
    return next(((s, t) for s, t, a in points if a >= target), None)
