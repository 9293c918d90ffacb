"""A table's test split from a second table (``--test PATH.csv``) or from a saved
Hugging Face DatasetDict's own test split: columns matched by name, text one-hot with the
training values, classes by value, the training split's statistics; rows of an unseen
value or class skipped and counted, never shifted; evaluate reads it again from
session.json."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from computeshare_desktop.data.prepared import load_data
from computeshare_desktop.data.table_test import UNKNOWN, UNSEEN
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.models import build_model

from helpers.cli import run_cli

TRAIN = ["a,b,color,kind", "1,10,red,cat", "2,20,blue,dog", "3,30,red,cat", "4,40,blue,dog",
         "5,50,red,cat", "6,60,blue,dog"]


@pytest.fixture(autouse=True)
def private_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))


def csv(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def skipped(tmp_path: Path) -> dict[str, int]:
    meta = next((tmp_path / "cache" / "table-tests").rglob("meta.json"))
    counts: dict[str, int] = json.loads(meta.read_text(encoding="utf-8"))["skipped"]["counts"]
    return counts


def test_reordered_columns_line_up_with_the_training_statistics(tmp_path: Path,
                                                                caplog) -> None:
    train_csv = csv(tmp_path / "pets.csv", TRAIN)
    exam = csv(tmp_path / "exam.csv", ["kind,note,color,b,a", "dog,x,blue,25,2.5",
                                       "cat,y,red,5,0"])
    with caplog.at_level(logging.INFO):
        train, test = load_data(str(train_csv), test_spec=str(exam))
    assert len(train) == 6  # all of it trains: another source tests
    assert "'note'" in caplog.text  # the extra column is ignored, and said
    assert test.info is train.info and train.info.features == ("a", "b", "color=blue",
                                                                 "color=red")
    raw = np.array([[2.5, 25, 1, 0], [0, 5, 0, 1]])
    values = np.array([[float(v) for v in line.split(",")[:2]] for line in TRAIN[1:]])
    onehot = np.array([[1.0, 0.0] if "blue" in line else [0.0, 1.0] for line in TRAIN[1:]])
    whole = np.concatenate([values, onehot], axis=1)  # the training rows, raw
    expected = (raw - whole.mean(0)) / whole.std(0)
    assert np.allclose(test.images.numpy(), expected, atol=1e-4)
    assert test.labels.tolist() == [1, 0]  # dog, cat: by value, in the training order
    assert np.allclose(train.images.numpy().mean(0), 0, atol=1e-5)


def test_unseen_values_and_unknown_classes_are_skipped_and_counted(tmp_path: Path) -> None:
    train_csv = csv(tmp_path / "pets.csv", TRAIN)
    exam = csv(tmp_path / "exam.csv", ["a,b,color,kind", "1,1,green,cat", "1,1,red,bird",
                                       "1,1,red,cow", "1,1,blue,dog", "2,2,red,cat"])
    _, test = load_data(str(train_csv), test_spec=str(exam))
    assert test.labels.tolist() == [1, 0]  # dog, cat: never a shifted label
    assert skipped(tmp_path) == {UNSEEN: 1, UNKNOWN: 2}
    again = load_data(str(train_csv), test_spec=str(exam))[1]  # from the cache
    assert again.labels.tolist() == [1, 0]


def test_a_test_table_lacking_a_column_or_holding_gaps_is_refused(tmp_path: Path) -> None:
    train_csv = csv(tmp_path / "pets.csv", TRAIN)
    cases = {"no_b.csv": (["a,color,kind", "1,red,cat"], "no column 'b'"),
             "no_kind.csv": (["a,b,color", "1,2,red"], "no column 'kind'"),
             "gap.csv": (["a,b,color,kind", "1,,red,cat", "2,nan,red,dog"],
                         r"missing values .*'b' \(2\)"),
             "text.csv": (["a,b,color,kind", "1,tall,red,cat"], "'b' is a number column"),
             "none.csv": (["a,b,color,kind", "1,2,red,cow"], "no row the training")}
    for name, (lines, message) in cases.items():
        with pytest.raises(ConfigError, match=message):
            load_data(str(train_csv), test_spec=str(csv(tmp_path / name, lines)))


def test_a_folder_tests_no_table_and_a_table_tests_no_images(tmp_path: Path) -> None:
    train_csv = csv(tmp_path / "pets.csv", TRAIN)
    (tmp_path / "photos" / "cat").mkdir(parents=True)
    with pytest.raises(ConfigError, match="its test source is a table too"):
        load_data(str(train_csv), test_spec=str(tmp_path / "photos"))
    with pytest.raises(ConfigError, match="is a table: the training data is images"):
        load_data("mnist-sample", test_spec=str(train_csv))


def test_evaluate_reads_the_test_table_from_session_json(tmp_path: Path, capsys) -> None:
    train_csv = csv(tmp_path / "pets.csv", TRAIN)
    exam = csv(tmp_path / "exam.csv", ["b,a,color,kind", "10,1,red,cat", "20,2,blue,dog",
                                       "30,3,red,bird"])
    train, _ = load_data(str(train_csv), label="kind", test_spec=str(exam))
    out = tmp_path / "run"
    out.mkdir()
    torch.save(build_model("mlp", train.info).state_dict(), out / "model.pth")
    config = {"dataset": str(train_csv), "model": "mlp", "label_column": "kind",
              "test_data": str(exam)}
    (out / "session.json").write_text(json.dumps({"config": config}), encoding="utf-8")
    capsys.readouterr()
    assert run_cli(["evaluate", str(out / "model.pth"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["samples"] == 2  # the bird is skipped


def test_a_saved_dataset_dicts_own_test_split_tests_its_table(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({"x": datasets.Value("float32"),
                                  "size": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["small", "big"])})

    def split(rows: list[tuple[float, str, int]]) -> object:
        x, size, label = zip(*rows, strict=True)
        return datasets.Dataset.from_dict({"x": list(x), "size": list(size),
                                           "label": list(label)}, features=features)
    train_rows = [(float(i), ("s", "m")[i % 2], i % 2) for i in range(8)]
    test_rows = [(100.0, "m", 1), (0.0, "xl", 0), (-4.0, "s", 0)]
    root = tmp_path / "rows"
    datasets.DatasetDict({"train": split(train_rows), "test": split(test_rows)}
                         ).save_to_disk(str(root))
    train, test = load_data(str(root))
    assert len(train) == 8 and train.info.classes == ("small", "big")
    assert test.labels.tolist() == [1, 0]  # the 'xl' row is skipped, never a zero vector
    x = np.arange(8.0)
    assert test.images[:, 0].tolist() == pytest.approx([(100 - x.mean()) / x.std(),
                                                         (-4 - x.mean()) / x.std()], abs=1e-4)
    assert skipped(tmp_path) == {UNSEEN: 1}
    exam = csv(tmp_path / "exam.csv", ["size,x,label", "m,3,big", "s,1,small", "s,1,huge"])
    assert load_data(str(root), test_spec=str(exam))[1].labels.tolist() == [1, 0]
