"""``predict`` and ``evaluate`` read what they need and no more: a .pt2 predicts with its
session's data folder gone; an explicit ``--dataset`` replaces the session's data and its
``--test``; a path that is not there is named as such. Tiny PNG folders the test writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from computeshare_desktop.cli.main import main
from computeshare_desktop.data.prepared import load_data
from computeshare_desktop.hub.exports import export_program
from computeshare_desktop.hub.outputs import MODEL_FILE, PROGRAM_FILE, OutputDir
from computeshare_desktop.models import build_model

SIZE = 8  # pixels: mlp takes images of any size


def write_classes(root: Path, counts: dict[str, int], seed: int = 0) -> Path:
    """PNG images, grey, a class brighter than the one before."""
    rng = np.random.default_rng(seed)
    for n, (name, count) in enumerate(counts.items()):
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            pixels = np.clip(rng.normal(60 + 120 * n, 10, (SIZE, SIZE)), 0, 255)
            Image.fromarray(pixels.astype(np.uint8)).save(root / name / f"{i}.png")
    return root


@pytest.fixture
def session(tmp_path, monkeypatch) -> Path:
    """A session's output folder as a hub leaves it (untrained mlp on a folder of classes
    a and b, tested on a second source ``exam`` that also holds a class z)."""
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))
    data = write_classes(tmp_path / "photos", {"a": 10, "b": 10})
    exam = write_classes(tmp_path / "exam", {"a": 3, "z": 3}, seed=1)
    train = load_data(str(data))[0]
    model = build_model("mlp", train.info, seed=0)
    out = OutputDir(tmp_path / "out")
    out.save_model(model.state_dict())
    out.save_program(export_program(model, train.info))
    out.save_classes(train.info.classes)
    out.write_session({"config": {"dataset": str(data), "model": "mlp",
                                  "test_data": str(exam)}})
    return out.path


def test_a_program_predicts_with_its_data_folder_gone(session, tmp_path, capsys):
    image = tmp_path / "x.png"
    (tmp_path / "photos" / "b" / "0.png").rename(image)
    shutil.rmtree(tmp_path / "photos")
    assert main(["predict", str(session / PROGRAM_FILE), str(image), "--json"]) == 0
    top = json.loads(capsys.readouterr().out)["top"]
    assert {g["class"] for g in top} == {"a", "b"}
    assert main(["predict", str(session / MODEL_FILE), str(image)]) == 2
    assert f"the session's data folder {tmp_path / 'photos'} is gone" in capsys.readouterr().err


def test_evaluate_names_its_test_source_and_dataset_replaces_the_sessions_test(
        session, tmp_path, capsys):
    assert main(["evaluate", str(session / MODEL_FILE)]) == 0
    assert capsys.readouterr().out.endswith(f"on 3 {tmp_path / 'exam'} test images\n")
    other = write_classes(tmp_path / "other", {"a": 10, "b": 10}, seed=2)
    for name in (MODEL_FILE, PROGRAM_FILE):
        assert main(["evaluate", str(session / name), "--dataset", str(other), "--json"]) == 0
        score = json.loads(capsys.readouterr().out)
        assert score["test"] == str(other) and score["samples"] == 2


def test_a_dataset_path_that_is_not_there_is_named(session, tmp_path, capsys):
    missing = tmp_path / "nonexistent"
    assert main(["evaluate", str(session / MODEL_FILE), "--dataset", str(missing)]) == 2
    assert f"no such folder or file: {missing}" in capsys.readouterr().err


def test_a_table_program_reads_a_csv_by_column_name_with_its_table_gone(
        tmp_path, monkeypatch, capsys):
    """features.json (written beside classes.json) keeps a table's columns: a CSV whose
    columns come in another order, with the label column too, is read by name."""
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(0)
    lines = ["height,weight,colour,kind"]
    for i in range(40):
        lines.append(f"{rng.normal(100 * (i % 2), 5):.2f},{rng.normal(3, 1):.2f},"
                     f"{('red', 'blue')[i % 3 == 0]},{('small', 'tall')[i % 2]}")
    table = tmp_path / "people.csv"
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    train = load_data(str(table))[0]
    assert train.info.features == ("height", "weight", "colour=blue", "colour=red")
    model = build_model("mlp", train.info, seed=0)
    out = OutputDir(tmp_path / "out")
    out.save_program(export_program(model, train.info))
    out.save_classes(train.info.classes)
    out.save_features(train.info.features)
    out.write_session({"config": {"dataset": str(table), "model": "mlp"}})
    rows = tmp_path / "rows.csv"
    rows.write_text("kind,colour,weight,height\n?,red,3.1,0.5\n?,blue,2.9,101\n",
                    encoding="utf-8")
    same = tmp_path / "same.csv"
    same.write_text("height,weight,colour\n0.5,3.1,red\n101,2.9,blue\n", encoding="utf-8")
    table.unlink()
    outputs = []
    for path in (rows, same):
        assert main(["predict", str(out.path / PROGRAM_FILE), str(path), "--json"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1].replace(str(same), str(rows))
