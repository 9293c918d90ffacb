"""Tables and their options as a person first meets them: --input on a CSV, options a data kind has
no use for, a CSV's delimiter, a header with no rows, datasets' own progress bars."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from computeshare_desktop.data import table_cache
from computeshare_desktop.data.prepared import check_options, load_data
from computeshare_desktop.data.table_cache import prepare_table
from computeshare_desktop.data.tables import csv_delimiter
from computeshare_desktop.errors import ConfigError


def csv(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def people(path: Path, sep: str = ",") -> Path:
    rows = [sep.join(map(str, (150 + i, 50 + i % 7, f"n{i}", i % 2))) for i in range(20)]
    return csv(path, [sep.join(("height", "weight", "name", "y")), *rows])


def test_input_picks_a_csvs_feature_columns(tmp_path: Path) -> None:
    path = people(tmp_path / "p.csv")  # "name" has 20 text values: refused unless left out
    with pytest.raises(ConfigError, match="name"):
        prepare_table(path, cache_dir=tmp_path / "c")
    table = prepare_table(path, cache_dir=tmp_path / "c", input="height, weight")
    assert table.features == ("height", "weight") and table.train.info.shape == (2,)
    assert prepare_table(path, cache_dir=tmp_path / "c", input="weight").features == (
        "weight",)  # another --input is another cache entry
    with pytest.raises(ConfigError, match="no column 'size'.*--input"):
        prepare_table(path, cache_dir=tmp_path / "c", input="height,size")
    with pytest.raises(ConfigError, match="both a feature"):
        prepare_table(path, cache_dir=tmp_path / "c", input="height,y")


def test_load_data_passes_input_to_a_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    monkeypatch.setattr(table_cache, "default_cache_dir", lambda: tmp_path / "cache")
    train, _ = load_data(str(people(tmp_path / "p.csv")), input="height")
    assert train.info.features == ("height",)


def test_options_a_data_kind_has_no_use_for_are_refused_before_preparing(
        tmp_path: Path) -> None:
    (tmp_path / "photos" / "cat").mkdir(parents=True)
    photos, table = str(tmp_path / "photos"), str(people(tmp_path / "p.csv"))
    with pytest.raises(ConfigError, match="--label applies to tables.*a folder of images"):
        load_data(photos, label="kind")
    with pytest.raises(ConfigError, match="--input applies to tables.*a built-in"):
        check_options("mnist-sample", input="x")
    with pytest.raises(ConfigError, match="--image-size applies to images.*is a table"):
        load_data(table, image_size=32)
    check_options(table, label="y", input="height")
    check_options(photos, image_size=32)


@pytest.mark.parametrize(("sep", "said"), [(";", "a semicolon"), ("\t", "a tab"),
                                           ("|", "a vertical bar")])
def test_a_csvs_delimiter_is_told_from_its_head(tmp_path: Path, sep: str, said: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    path = people(tmp_path / "p.csv", sep)
    assert csv_delimiter(path) == sep
    with caplog.at_level(logging.INFO, logger="computeshare_desktop.data.tables"):
        table = prepare_table(path, cache_dir=tmp_path / "c", input="height,weight")
    assert table.features == ("height", "weight") and len(table.train.info.classes) == 2
    assert f"with {said} as its delimiter" in caplog.text


def test_a_comma_csv_stays_a_comma_csv(tmp_path: Path) -> None:
    quoted = csv(tmp_path / "q.csv", ["a,b,y", '"1;2",3,0', "4,5,1"])
    assert csv_delimiter(quoted) == "," and csv_delimiter(people(tmp_path / "p.csv")) == ","
    assert csv_delimiter(csv(tmp_path / "one.csv", ["y", "1", "2"])) == ","


def test_a_header_with_no_rows_says_so(tmp_path: Path) -> None:
    path = csv(tmp_path / "h.csv", ["a,b,y"])
    with pytest.raises(ConfigError, match="has a header but no rows"):
        prepare_table(path, cache_dir=tmp_path / "c")


def test_datasets_own_progress_bars_stay_off(tmp_path: Path,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    datasets = pytest.importorskip("datasets")
    from computeshare_desktop.data.hf_table import prepare_hf_table

    rows = datasets.Dataset.from_dict({"x": [float(i) for i in range(20)],
                                       "y": [i % 2 for i in range(20)]})
    rows.save_to_disk(str(tmp_path / "saved"))
    capfd.readouterr()
    datasets.enable_progress_bars()
    prepare_hf_table(tmp_path / "saved", label="y", cache_dir=tmp_path / "c")
    assert "parquet" not in capfd.readouterr().err.lower()
    assert datasets.is_progress_bar_enabled()  # as it was
