"""The Host dialog's preview without Qt (data/preview.py), and a folder's preparation as the
service reports it (service/prepare.py): what was skipped, progress as log lines."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest
from PIL import Image

from helpers.host import hosting
from computeshare_desktop.data.prepared import PrepareCancelled, PrepareProgress
from computeshare_desktop.data.preview import (HUGGING_FACE, IMAGES, TABLE, preview,
                                               spec_kind)
from computeshare_desktop.events import LogLine
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.service import HostService
from computeshare_desktop.service.prepare import ProgressLines, prepare


def write_sizes(root: Path, sizes: list[tuple[int, int]]) -> Path:
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
        for i, size in enumerate(sizes):
            Image.new("L", size, 40 * i).save(root / name / f"{i}.png")
    return root


def test_the_size_follows_the_cache_rule(tmp_path):
    same = write_sizes(tmp_path / "same", [(40, 30)] * 3)
    mixed = write_sizes(tmp_path / "mixed", [(40, 30), (50, 50), (40, 30)])
    assert preview(str(same)).image_size == "40×30 (their own size)"
    assert preview(str(mixed)).image_size == "224×224 (the images' sizes differ)"
    assert preview(str(mixed), image_size=64).image_size == "64×64 (as set)"
    thumbs = preview(str(same)).thumbnails
    assert len(thumbs) == 6 and thumbs[0].pixels.shape == (30, 40, 3)  # as big as they are
    assert [t.label for t in thumbs[:2]] == ["a", "b"]  # each class in turn


def test_what_cannot_be_used_says_why(tmp_path):
    (tmp_path / "one" / "only").mkdir(parents=True)
    Image.new("L", (8, 8)).save(tmp_path / "one" / "only" / "x.png")
    assert "1 class folder" in preview(str(tmp_path / "one")).error
    assert spec_kind(str(tmp_path / "missing.csv")) is None
    assert spec_kind("mnist-sample") is None


def test_kinds_and_a_hugging_face_folder_read_from_its_metadata(tmp_path):
    hf = tmp_path / "beans"
    for split, rows in (("train", 90), ("test", 10)):
        (hf / split).mkdir(parents=True)
        info = {"features": {"image": {"_type": "Image"}, "labels": {"_type": "ClassLabel"}},
                "splits": {split: {"name": split, "num_examples": rows}}}
        (hf / split / "dataset_info.json").write_text(json.dumps(info), encoding="utf-8")
        (hf / split / "state.json").write_text("{}", encoding="utf-8")
    (hf / "dataset_dict.json").write_text('{"splits": ["train", "test"]}', encoding="utf-8")
    table = tmp_path / "t.csv"
    table.write_text("x,y\n1,a\n", encoding="utf-8")
    assert [spec_kind(str(p)) for p in (hf, table, write_sizes(tmp_path / "i", [(8, 8)] * 2))
            ] == [HUGGING_FACE, TABLE, IMAGES]
    shown = preview(str(hf))
    assert shown.summary == "Hugging Face dataset: train (90 rows), test (10 rows)"
    assert shown.columns == ("image", "labels")



def test_a_damaged_hugging_face_metadata_file_is_said_and_previews_less(tmp_path, caplog):
    hf = tmp_path / "beans"
    (hf / "train").mkdir(parents=True)
    (hf / "train" / "state.json").write_text("{}", encoding="utf-8")
    info = hf / "train" / "dataset_info.json"
    info.write_text(json.dumps({"features": ["image"], "splits": {
        "train": {"num_examples": "many"}}}), encoding="utf-8")
    (hf / "dataset_dict.json").write_text('{"splits": ["train"]}', encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        shown = preview(str(hf))
    assert shown.summary == "Hugging Face dataset: train" and shown.columns == ()
    assert f"cannot read {info} (Expected `object | null`, got `array` - at `$.features`)" \
        in caplog.text
    (hf / "dataset_dict.json").write_text('{"splits": "train"}', encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert preview(str(hf)).summary == "Hugging Face dataset: no splits"
    assert "Expected `array`, got `str` - at `$.splits`" in caplog.text
    assert not list(hf.rglob("*.damaged-*"))  # the dataset's files: nothing written there

def test_prepare_reports_the_skips_and_finds_its_cache(tmp_path):
    root = write_sizes(tmp_path / "pets", [(8, 8)] * 4)
    (root / "a" / "bad.png").write_bytes(b"nope")
    report = prepare(str(root), cache_dir=tmp_path / "cache")
    assert report is not None and not report.cached and report.train + report.test == 8
    assert report.lines()[1].startswith("Skipped 1 (an unreadable or damaged image): a/bad.png")
    again = prepare(str(root), cache_dir=tmp_path / "cache")
    assert again is not None and again.cached and again.skipped == report.skipped
    assert prepare("mnist-sample") is None  # the session loads a built-in itself


def test_progress_lines_are_paced_the_first_and_last_always_said():
    posted: list[LogLine] = []
    lines = ProgressLines(posted.append, every_s=3600)
    for done in range(1, 6):
        lines(PrepareProgress(done, 5, f"preparing x: {done} of 5 images"))
    assert [p.text for p in posted] == ["Preparing x: 1 of 5 images",
                                        "Preparing x: 5 of 5 images"]


def test_the_host_service_says_what_was_skipped_and_stop_cancels(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "datasets"))
    root = write_sizes(tmp_path / "pets", [(8, 8)] * 4)
    (root / "b" / "bad.png").write_bytes(b"nope")
    plan = hosting(HubConfig(dataset=str(root)), tmp_path / "run")
    service = HostService(plan)
    service._prepare_data()  # on the hub's thread, before the session opens
    texts = [tagged.event.text for tagged in service.drain()]
    assert texts[0] == "Preparing pets: 8 of 8 images"  # bad.png's header did not open
    assert texts[1:] == ["pets: 6 training and 2 test images prepared",
                          "Skipped 1 (an unreadable or damaged image): b/bad.png",
                          "pets: 8 images at 8×8, 1 channel (their own size; set the image "
                          "size to choose)"]

    other = write_sizes(tmp_path / "other", [(8, 8)] * 4)
    stopped = HostService(dataclasses.replace(plan, config=HubConfig(dataset=str(other))))
    stopped.stop()  # Stop while preparing: nothing is kept
    with pytest.raises(PrepareCancelled):
        stopped._prepare_data()
    assert len(list((tmp_path / "datasets").rglob("meta.json"))) == 1


def test_with_a_test_source_all_of_the_folder_is_prepared_to_train(tmp_path):
    root = write_sizes(tmp_path / "pets", [(8, 8)] * 3)
    report = prepare(str(root), cache_dir=tmp_path / "cache", test_spec=str(tmp_path / "t"))
    assert report is not None and (report.train, report.test) == (6, 0)  # as the session


def test_a_saved_dataset_shows_its_label_column_classes_and_thumbnails(tmp_path):
    datasets = pytest.importorskip("datasets")
    labels = [0, 1, 1, 0, 1]
    rows = datasets.Dataset.from_dict(
        {"img": [Image.new("RGB", (12, 10), (50 * i, 0, 0)) for i in range(5)],
         "kind": labels},
        features=datasets.Features({"img": datasets.Image(),
                                    "kind": datasets.ClassLabel(names=["ant", "bee"])}))
    datasets.DatasetDict(train=rows, test=rows).save_to_disk(str(tmp_path / "bugs"))
    shown = preview(str(tmp_path / "bugs"))
    assert shown.kind == HUGGING_FACE and shown.classes == (("ant", 2), ("bee", 3))
    assert shown.label == "kind" and shown.notes == ("Images from the column 'img'",)
    assert [t.label for t in shown.thumbnails] == ["ant", "bee", "ant", "bee", "bee"]
    assert shown.thumbnails[0].pixels.shape == (10, 12, 3)
    refused = preview(str(tmp_path / "bugs"), label="colour")
    assert refused.classes == () and "colour" in refused.notes[0]  # said, not raised


def test_a_saved_datasets_images_are_prepared_as_the_session_loads_them(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = datasets.Dataset.from_dict(
        {"img": [Image.new("L", (8, 8), 40 * i) for i in range(6)], "kind": [0, 1] * 3},
        features=datasets.Features({"img": datasets.Image(),
                                    "kind": datasets.ClassLabel(names=["ant", "bee"])}))
    rows.save_to_disk(str(tmp_path / "bugs"))
    report = prepare(str(tmp_path / "bugs"), cache_dir=tmp_path / "cache", test_fraction=0.34,
                     label="kind")
    assert report is not None and (report.name, report.train, report.test) == ("bugs", 4, 2)
    assert prepare(str(tmp_path / "bugs"), cache_dir=tmp_path / "cache", test_fraction=0.34,
                   label="kind").cached
    features = datasets.Dataset.from_dict({"x": [1.0, 2.0] * 5, "kind": [0, 1] * 5})
    features.save_to_disk(str(tmp_path / "rows"))
    table = prepare(str(tmp_path / "rows"), cache_dir=tmp_path / "cache", test_fraction=0.2,
                    label="kind")
    assert table is not None and (table.train, table.test, table.unit) == (8, 2, "rows")
