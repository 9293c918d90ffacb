"""metrics.jsonl read line by line through stored.read_lines: a damaged line (torn by a
crash, not JSON, a field of the wrong type) is skipped with one warning naming its line
number, and never ends a resume nor the list of recent sessions; a file the hub wrote,
NaN included, reads as before."""

from __future__ import annotations

import json
import logging
import math

from computeshare_desktop.hub.outputs import (METRICS_FILE, SESSION_FILE, OutputDir,
                                              metric_records)

ROUNDS = [{"type": "round", "version": v, "loss": 1.0 / v, "workers": 2} for v in (1, 2, 3)]


def write_lines(folder, lines):
    (folder / METRICS_FILE).write_bytes("".join(f"{line}\n" for line in lines).encode())


def damaged_copies(folder):
    return sorted(folder.glob(METRICS_FILE + ".damaged-*"))


def test_records_the_hub_wrote_read_as_before(tmp_path):
    out = OutputDir(tmp_path)
    records = [*ROUNDS, {"type": "eval", "version": 3, "accuracy": 0.5, "test_loss": math.nan,
                         "final": True, "elapsed_s": 1.5}]
    for record in records:
        out.append_metric(record)  # Python's json: NaN is written as NaN
    assert b"NaN" in (tmp_path / METRICS_FILE).read_bytes()
    read = list(metric_records(tmp_path))
    assert read[:3] == ROUNDS and math.isnan(read[3]["test_loss"])
    assert {k: v for k, v in read[3].items() if k != "test_loss"} == {
        "type": "eval", "version": 3, "accuracy": 0.5, "final": True, "elapsed_s": 1.5}
    assert out.cut_metrics(3) == 0 and not damaged_copies(tmp_path)
    assert out.cut_metrics(2) == 2  # the round and the evaluation of version 3
    assert list(metric_records(tmp_path)) == ROUNDS[:2]


def test_a_damaged_line_is_skipped_with_its_line_number(tmp_path, caplog):
    write_lines(tmp_path, [json.dumps(ROUNDS[0]), '{"type": "round", "version": "two"}',
                           "[1, 2]", json.dumps(ROUNDS[1]), '{"type": "round", "vers'])
    with caplog.at_level(logging.WARNING):
        assert list(metric_records(tmp_path)) == ROUNDS[:2]
        assert list(metric_records(tmp_path)) == ROUNDS[:2]  # said once
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 3
    assert "line 2 is damaged (Expected `int`, got `str` - at `$.version`)" in said[0]
    assert "line 3 is damaged (Expected `object`, got `array`)" in said[1]
    assert "line 5 is damaged (" in said[2] and "truncated" in said[2]
    assert all(str(tmp_path / METRICS_FILE) in line for line in said)


def test_the_recent_sessions_summary_skips_a_damaged_line(tmp_path, caplog):
    (tmp_path / SESSION_FILE).write_text(json.dumps({"config": {"rounds": 5}}),
                                         encoding="utf-8")
    write_lines(tmp_path, [json.dumps(ROUNDS[0]), '{"type": "eval", "version": null}',
                           json.dumps({"type": "eval", "version": 4, "final": "yes"}),
                           json.dumps(ROUNDS[2])])
    with caplog.at_level(logging.WARNING):
        summary = OutputDir(tmp_path).summary()
    assert summary is not None and summary["version"] == 3 and not summary["finished"]
    assert "line 2 is damaged" in caplog.text and "line 3 is damaged" in caplog.text
    assert "Expected `bool`, got `str` - at `$.final`" in caplog.text


def test_a_resume_drops_damaged_lines_and_keeps_the_file_as_it_was(tmp_path, caplog):
    lines = [json.dumps(ROUNDS[0]), '{"type": "round", "version": "x"}',
             json.dumps(ROUNDS[1]), json.dumps(ROUNDS[2]), '{"type": "ro']
    write_lines(tmp_path, lines)
    before = (tmp_path / METRICS_FILE).read_bytes()
    with caplog.at_level(logging.WARNING):
        assert OutputDir(tmp_path).cut_metrics(2) == 3  # two damaged lines, one past 2
    assert "line 2 is damaged" in caplog.text and "line 5 is damaged" in caplog.text
    [kept] = damaged_copies(tmp_path)
    assert kept.read_bytes() == before and kept.name in caplog.text
    assert list(metric_records(tmp_path)) == ROUNDS[:2]
    assert (tmp_path / METRICS_FILE).read_text(encoding="utf-8").splitlines() == [
        lines[0], lines[2]]


def test_a_last_line_without_its_newline_is_kept_whole(tmp_path):
    (tmp_path / METRICS_FILE).write_text(json.dumps(ROUNDS[0]) + "\n" + json.dumps(ROUNDS[2])
                                         + "\n" + json.dumps(ROUNDS[1]), encoding="utf-8")
    out = OutputDir(tmp_path)
    assert out.cut_metrics(2) == 1
    out.append_metric(ROUNDS[2])
    assert list(metric_records(tmp_path)) == [ROUNDS[0], ROUNDS[1], ROUNDS[2]]


def test_no_file_has_no_records(tmp_path):
    assert list(metric_records(tmp_path)) == [] and OutputDir(tmp_path).cut_metrics(1) == 0
