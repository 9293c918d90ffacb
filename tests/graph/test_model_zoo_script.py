"""scripts/model_zoo.py, CI's torchvision step, on two small classifiers so it cannot rot:
each row is a real run through the session's path, and the exit status says whether every
row passed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.model_zoo import Row, markdown

REPO = Path(__file__).resolve().parents[2]


def zoo(out: Path, only: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scripts.model_zoo", "--only", only,
                           "--out", str(out)], cwd=REPO, text=True, capture_output=True,
                          timeout=600)


def test_two_classifiers_train_as_their_modules_and_the_table_says_so(tmp_path: Path) -> None:
    run = zoo(tmp_path, "squeezenet1_1,mnasnet0_5")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "model_zoo.json").read_text(encoding="utf-8"))
    rows = {row["model"]: row for row in report["rows"]}
    assert set(rows) == {"squeezenet1_1", "mnasnet0_5"}
    for row in rows.values():
        assert row["outcome"] == "equal", row
        assert row["size"] == 32 and row["ops"] > 20 and row["parameters"] > 100_000
        assert row["detail"].startswith("max relative error")
    assert report["summary"]["failing"] == [] and report["summary"]["equal"] == 2
    table = (tmp_path / "model_zoo.md").read_text(encoding="utf-8")
    assert "| squeezenet1_1 | 32 |" in table and "trains (equal)" in table


def test_a_row_that_does_not_pass_fails_the_run(tmp_path: Path) -> None:
    run = zoo(tmp_path, "no_such_net")
    assert run.returncode == 1, run.stdout + run.stderr
    report = json.loads((tmp_path / "model_zoo.json").read_text(encoding="utf-8"))
    assert report["summary"]["failing"] == ["no_such_net"]
    assert "unknown torchvision architecture" in report["rows"][0]["detail"]


@pytest.mark.parametrize("outcome, detail, passes", [
    ("equal", "max relative error 1e-07", True),
    ("refused", "the model exports to a graph workers refuse: layer features.3: "
                "nn.Conv2d: operation 'x' is not allowed", True),
    ("refused", "the model exports to a graph workers refuse: tensor 'slice_4' has a "
                "storage offset", False),  # no layer named: the person cannot act on it
    ("refused", "the model has 303,311,882 values to train, more than the 268,435,456 a "
                "model frame carries: train part of it (--train-only PREFIX, ...)", True),
    ("differs", "gradient fc.weight: relative error 0.1", False),
    ("failed", "no result within 900 s", False),
])
def test_what_passes(outcome: str, detail: str, passes: bool) -> None:
    row = Row("net", 32, outcome, detail, 10, 5, 1.0, 0.5)
    assert row.passes is passes
    assert ("trains (equal)" in markdown([row])) is (outcome == "equal")
