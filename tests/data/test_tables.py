"""Tables (CSV, Parquet) as a session's data: reading, refusals, the prepared cache."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from computeshare_desktop.data import table_cache
from computeshare_desktop.data.folders import dataset_label
from computeshare_desktop.data.info import normalize, raw_inputs
from computeshare_desktop.data.mapped import dataset_valid
from computeshare_desktop.data.prepared import load_data
from computeshare_desktop.data.table_cache import PreparedTable, prepare_table
from computeshare_desktop.data.tables import is_table_spec, read_head
from computeshare_desktop.errors import ConfigError


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_table_specs_are_csv_and_parquet_in_any_case() -> None:
    assert is_table_spec("data/x.csv") and is_table_spec("X.CSV")
    assert is_table_spec("a.Parquet")
    assert not is_table_spec("mnist") and not is_table_spec("") and not is_table_spec("x.tsv")


def test_read_head_gives_names_and_first_rows_as_text(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "t.csv", "\ufeffx, y ,label\n1,2,cat\n\n3,,dog\n4,5,cat\n")
    columns, rows = read_head(path, rows=2)
    assert columns == ["x", "y", "label"]
    assert rows == [["1", "2", "cat"], ["3", "", "dog"]]


def test_read_head_of_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [1.5, None], "s": ["a", "b"]}), path)
    assert read_head(path) == (["x", "s"], [["1.5", "a"], ["", "b"]])


def test_read_head_refuses_a_missing_file_or_a_headerless_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a file"):
        read_head(tmp_path / "none.csv")
    with pytest.raises(ConfigError, match="header"):
        read_head(write_csv(tmp_path / "empty.csv", ""))


# ---------------------------------------------------------------- loading a table


def prepare(path: Path, tmp_path: Path, **kwargs: Any) -> PreparedTable:
    return prepare_table(path, cache_dir=tmp_path / "cache", **kwargs)


def rows_csv(path: Path, header: str, rows: list[str]) -> Path:
    return write_csv(path, "\n".join([header, *rows]) + "\n")


def test_a_csv_with_a_text_label_in_the_last_column(tmp_path: Path) -> None:
    rows = [f"{i},{i % 3 * 10 + 0.5},{('cat', 'dog')[i % 2]}" for i in range(40)]
    table = prepare(rows_csv(tmp_path / "pets.csv", "a,b,kind", rows), tmp_path)
    info = table.train.info
    assert (info.kind, info.shape, info.in_features, info.name) == ("table", (2,), 2, "pets")
    assert info.classes == ("cat", "dog") and table.features == ("a", "b")
    assert (len(table.train), len(table.test)) == (36, 4)  # 2 of each class held out
    assert table.test.labels.tolist().count(0) == 2
    assert table.train.images.dtype == torch.float32
    # standardized with the training split's statistics, which the info keeps
    assert torch.allclose(table.train.images.mean(0), torch.zeros(2), atol=1e-5)
    raw = raw_inputs(table.train.images, info)  # what the exported model is fed: raw values
    assert sorted(raw[:, 0].round().tolist()) == [float(i) for i in range(40)
                                                  if i not in held_out(table)]
    assert info.mean[0] == pytest.approx(float(raw[:, 0].mean()), abs=1e-4)
    assert normalize(table.train.images, info) is table.train.images


def held_out(table: PreparedTable) -> set[int]:
    """The test split's values of column a (its row numbers in these tables)."""
    raw = raw_inputs(table.test.images, table.test.info)
    return set(raw[:, 0].round().to(torch.int64).tolist())


def test_an_integer_label_and_a_label_column_by_name(tmp_path: Path) -> None:
    rows = [f"{(10, 2, 9)[i % 3]},{i * 0.5},{i % 5}" for i in range(30)]
    table = prepare(rows_csv(tmp_path / "t.csv", "grade,x,y", rows), tmp_path,
                    label="grade")
    assert table.train.info.classes == ("2", "9", "10")  # numbers sort as numbers
    assert table.features == ("x", "y")
    raw = raw_inputs(table.train.images, table.train.info)
    for x, label in zip(raw[:, 0].tolist(), table.train.labels.tolist(), strict=True):
        grade = (10, 2, 9)[round(x * 2) % 3]  # row i: x = i / 2
        assert table.train.info.classes[label] == str(grade)


def test_a_text_feature_with_few_values_is_one_hot_encoded(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rows = [f"{('red', 'green', 'blue')[i % 3]},{i},{i % 2}" for i in range(30)]
    with caplog.at_level(logging.INFO):
        table = prepare(rows_csv(tmp_path / "t.csv", "colour,x,label", rows), tmp_path)
    assert table.features == ("colour=blue", "colour=green", "colour=red", "x")
    raw = raw_inputs(table.train.images, table.train.info)
    assert torch.allclose(raw[:, :3].sum(1), torch.ones(len(raw)), atol=1e-5)
    assert "'colour' is one-hot encoded as 3 features" in caplog.text


def test_a_text_feature_with_many_values_is_refused_by_name(tmp_path: Path) -> None:
    rows = [f"name{i},{i},{i % 2}" for i in range(30)]
    with pytest.raises(ConfigError, match=r"'who' \(30 values\)"):
        prepare(rows_csv(tmp_path / "t.csv", "who,x,label", rows), tmp_path)


def test_missing_values_are_refused_naming_each_column_with_a_count(tmp_path: Path) -> None:
    rows = ["1,,a", "2,NaN,b", "nan,3,a", "4,-inf,b", "5,6,"]
    with pytest.raises(ConfigError, match=r"'x' \(1\), 'y' \(3\), 'label' \(1\)"):
        prepare(rows_csv(tmp_path / "t.csv", "x,y,label", rows), tmp_path)


@pytest.mark.parametrize(("label", "rows", "match"), [
    ("nope", ["1,a", "2,b"], "no column 'nope'"),
    ("", ["1,a", "2,a", "3,a"], "has 1 value"),
    ("", ["1,0.5", "2,1.5"], "fractional numbers"),
    ("", ["1,a", "2,b"], "no class with 2 rows"),
])
def test_a_label_that_cannot_make_classes_is_refused(tmp_path: Path, label: str,
                                                     rows: list[str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        prepare(rows_csv(tmp_path / "t.csv", "x,label", rows), tmp_path, label=label)


def test_two_columns_of_one_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="more than one column 'x'"):
        prepare(rows_csv(tmp_path / "t.csv", "x,x,label", ["1,2,a", "3,4,b"]), tmp_path)


def test_a_table_of_the_label_alone_or_ragged_rows_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no feature column"):
        prepare(rows_csv(tmp_path / "t.csv", "label", ["a", "b"]), tmp_path)
    with pytest.raises(ConfigError, match="line 3 has 3 cells"):
        prepare(rows_csv(tmp_path / "u.csv", "x,label", ["1,a", "2,b,c"]), tmp_path)


def test_the_cache_is_used_again_and_follows_the_file(tmp_path: Path) -> None:
    path = rows_csv(tmp_path / "t.csv", "x,label", [f"{i},{i % 2}" for i in range(20)])
    first = prepare(path, tmp_path)
    again = prepare(path, tmp_path)
    assert (first.cached, again.cached) == (False, True)
    assert torch.equal(first.train.images, again.train.images)
    other = prepare(path, tmp_path, test_fraction=0.5)
    assert not other.cached and len(other.test) == 10
    rows_csv(path, "x,label", [f"{i},{i % 2}" for i in range(22)])
    os.utime(path, ns=(1, 1))  # a new size and mtime: prepared again
    assert not prepare(path, tmp_path).cached


def test_a_parquet_table(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [float(i) for i in range(20)],
                             "flag": [i % 3 == 0 for i in range(20)],
                             "label": [("no", "yes")[i % 2] for i in range(20)]}), path)
    table = prepare(path, tmp_path)
    assert table.features == ("x", "flag") and table.train.info.classes == ("no", "yes")
    assert len(table.train) + len(table.test) == 20


def test_parquet_without_pyarrow_names_the_extra(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ConfigError, match=r"computeshare-desktop\[parquet\]"):
        read_head(path)


def test_load_data_takes_a_table_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table_cache, "default_cache_dir", lambda: tmp_path / "cache")
    path = rows_csv(tmp_path / "t.csv", "x,y,z", [f"{i},{i % 2},{i % 3}" for i in range(20)])
    train, test = load_data(str(path), label="y", test_fraction=0.2)
    assert train.info.classes == ("0", "1") and (len(train), len(test)) == (16, 4)
    assert train.info.shape == (2,)  # x and z
    assert dataset_valid(str(path)) and dataset_label(str(path)) == "t"
