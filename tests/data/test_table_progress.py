"""A table's preparation tells its progress (rows read, over both passes, throttled as
images' is) and can be cancelled: PrepareCancelled, and nothing cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from computeshare_desktop.data import table_progress
from computeshare_desktop.data.prepared import PrepareCancelled, PrepareProgress, load_data
from computeshare_desktop.data.table_cache import prepare_table
from computeshare_desktop.data.tables import count_rows
from computeshare_desktop.service.prepare import ProgressLines, prepare

ROWS = 1_000


@pytest.fixture(autouse=True)
def every_step(monkeypatch):
    """Every 100 rows told, unthrottled: the steps a test can see in a small table."""
    monkeypatch.setattr(table_progress, "CHECK_ROWS", 100)
    monkeypatch.setattr(table_progress, "REPORT_EVERY_S", 0.0)


def write_people(path: Path, rows: int = ROWS) -> Path:
    lines = [f"{i % 37},{(i * 7) % 11 / 3:.3f},{'yes' if i % 3 else 'no'}"
             for i in range(rows)]
    path.write_text("age,score,member\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def metas(cache: Path) -> list[Path]:
    return list(cache.rglob("meta.json"))


def test_count_rows_of_a_csv_and_a_parquet_file(tmp_path):
    assert count_rows(write_people(tmp_path / "people.csv", 25)) == 25
    (tmp_path / "bare.csv").write_text("a,b\n1,2\n3,4", encoding="utf-8")  # no last break
    assert count_rows(tmp_path / "bare.csv") == 2
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"x": [1.0] * 7, "y": [0, 1] * 3 + [0]}), tmp_path / "t.parquet")
    assert count_rows(tmp_path / "t.parquet") == 7


def test_progress_moves_forward_over_both_passes_and_ends_at_the_total(tmp_path):
    told: list[PrepareProgress] = []
    table = prepare_table(write_people(tmp_path / "people.csv"), cache_dir=tmp_path / "c",
                          progress=told.append)
    assert not table.cached and len(table.train) + len(table.test) == ROWS
    done = [p.done for p in told]
    assert done == sorted(done) and len(done) >= 2 * ROWS // 100
    assert {p.total for p in told} == {2 * ROWS} and told[-1].done == 2 * ROWS
    texts = [p.text for p in told]
    assert "checking people.csv: 500 of 1,000 rows" in texts
    assert texts[-1] == "reading people.csv: 1,000 of 1,000 rows"
    again: list[PrepareProgress] = []  # from the cache: nothing to tell
    assert prepare_table(tmp_path / "people.csv", cache_dir=tmp_path / "c",
                         progress=again.append).cached and not again


@pytest.mark.parametrize("when", ["checking", "reading"])
def test_cancel_mid_way_caches_nothing_and_the_next_prepare_reads_again(tmp_path, when):
    path, cache = write_people(tmp_path / "people.csv"), tmp_path / "c"
    told: list[PrepareProgress] = []

    def cancel() -> bool:  # once the pass is half read
        return any(p.text.startswith(f"{when} people.csv: 500 ") for p in told)

    with pytest.raises(PrepareCancelled, match="people.csv was cancelled"):
        prepare_table(path, cache_dir=cache, progress=told.append, cancel=cancel)
    assert told[-1].done < 2 * ROWS and not metas(cache)
    again: list[PrepareProgress] = []
    table = prepare_table(path, cache_dir=cache, progress=again.append)
    assert not table.cached and again[-1].done == again[-1].total == 2 * ROWS
    assert len(metas(cache)) == 1


def test_load_data_tells_a_table_and_its_test_table(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "c"))
    train = write_people(tmp_path / "people.csv")
    test = write_people(tmp_path / "later.csv", 300)
    told: list[PrepareProgress] = []
    got = load_data(str(train), test_spec=str(test), progress=told.append)
    assert (len(got[0]), len(got[1])) == (ROWS, 300)
    texts = [p.text for p in told]
    assert "reading people.csv: 1,000 of 1,000 rows" in texts
    assert texts[-1] == "reading the test table later.csv: 300 of 300 rows"
    assert (told[-1].done, told[-1].total) == (300, 300)
    with pytest.raises(PrepareCancelled):  # --test's table cancelled: its cache not kept
        load_data(str(train), test_spec=str(write_people(tmp_path / "other.csv", 300)),
                  cancel=lambda: True)
    assert len(metas(tmp_path / "c")) == 2


def test_the_service_prepares_a_table_with_lines_and_a_report(tmp_path):
    path, posted = write_people(tmp_path / "people.csv"), []
    with pytest.raises(PrepareCancelled):
        prepare(str(path), cache_dir=tmp_path / "c", cancel=lambda: True)
    report = prepare(str(path), cache_dir=tmp_path / "c", test_fraction=0.2,
                     progress=ProgressLines(posted.append, every_s=3600))
    assert report is not None and report.unit == "rows" and not report.cached
    assert report.train + report.test == ROWS and report.lines()[0].startswith(
        f"people: {report.train:,} training and {report.test:,} test rows prepared")
    assert [line.text for line in posted] == ["Checking people.csv: 100 of 1,000 rows",
                                              "Reading people.csv: 1,000 of 1,000 rows"]
    assert prepare(str(path), cache_dir=tmp_path / "c", test_fraction=0.2).cached
