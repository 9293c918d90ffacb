"""Tables (CSV, Parquet) as a session's data: reading, refusals, the prepared cache."""

from __future__ import annotations

from pathlib import Path

import pytest

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
