"""The caches' manifests (meta.json of a prepared table, a test table, a folder of images)
read through stored.read_manifest, and a Hugging Face split's state.json through
stored.decode_stored: a damaged manifest is said (msgspec names the field), kept beside
itself, and its cache prepared again; one of an earlier layout is prepared again quietly;
one the previous version wrote reads as before."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch
from PIL import Image

from computeshare_desktop.data import hf, image_cache, table_test
from computeshare_desktop.data.prepared import prepare_folder
from computeshare_desktop.data.table_cache import prepare_table
from computeshare_desktop.data.table_test import prepare_table_test

TRAIN = "a,b,color,kind\n1,10,red,cat\n2,20,blue,dog\n3,30,red,cat\n4,40,blue,dog\n" \
        "5,50,red,cat\n6,60,blue,dog\n"


def meta_of(folder: Path, kind: str) -> Path:
    [meta] = (folder / kind).glob("*/meta.json")
    return meta


def damaged_copies(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".damaged-*"))


def edit(path: Path, **values: object) -> str:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(values)
    text = json.dumps(data, indent=1)
    path.write_text(text, encoding="utf-8")
    return text


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "pets.csv"
    path.write_text(TRAIN, encoding="utf-8")
    return path


# ---------------------------------------------------------------- a prepared table
def test_a_table_manifest_the_previous_version_wrote_reads_as_before(tmp_path, table):
    first = prepare_table(table, cache_dir=tmp_path / "cache")
    meta = meta_of(tmp_path / "cache", "tables")
    old = {"format": 2, "name": "pets", "label": "kind", "classes": ["cat", "dog"],
           "features": list(first.features), "encoded": ["color"],
           "train": len(first.train), "test": len(first.test),
           "mean": list(first.train.info.mean), "std": list(first.train.info.std),
           "source": str(table), "schema": {
               "label": "kind", "numbered": False, "classes": ["cat", "dog"],
               "columns": [["a", []], ["b", []], ["color", ["blue", "red"]]], "key": ""}}
    meta.write_text(json.dumps(old, indent=1), encoding="utf-8")  # as json.dumps wrote it
    again = prepare_table(table, cache_dir=tmp_path / "cache")
    assert again.cached and again.schema == first.schema
    assert again.schema.key == meta.parent.name and again.features == first.features
    assert again.train.info == first.train.info
    assert torch.equal(again.train.images, first.train.images)
    assert not damaged_copies(meta)


@pytest.mark.parametrize("values, said", [
    ({"train": "four"}, "Expected `int`, got `str` - at `$.train`"),
    ({"test": -1}, "Expected `int` >= 0 - at `$.test`"),
    ({"schema": {"label": "kind"}}, "missing required field `numbered` - at `$.schema`"),
    ({"mean": [0.0]}, "mean/std need one value per channel"),
])
def test_a_damaged_table_manifest_is_said_kept_and_prepared_again(tmp_path, table, caplog,
                                                                 values, said):
    first = prepare_table(table, cache_dir=tmp_path / "cache")
    meta = meta_of(tmp_path / "cache", "tables")
    text = edit(meta, **values)
    with caplog.at_level(logging.WARNING):
        again = prepare_table(table, cache_dir=tmp_path / "cache")
    assert not again.cached and again.schema == first.schema
    assert said in caplog.text and str(meta) in caplog.text
    [kept] = damaged_copies(meta)
    assert kept.read_text(encoding="utf-8") == text
    assert prepare_table(table, cache_dir=tmp_path / "cache").cached  # written anew


@pytest.mark.parametrize("values", [{"format": 1}, {"format": None}])
def test_a_table_cache_of_another_layout_is_prepared_again_quietly(tmp_path, table, caplog,
                                                                  values):
    prepare_table(table, cache_dir=tmp_path / "cache")
    meta = meta_of(tmp_path / "cache", "tables")
    data = json.loads(meta.read_text(encoding="utf-8"))
    del data["schema"]  # the first layout kept no schema
    meta.write_text(json.dumps({**data, **values}), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert not prepare_table(table, cache_dir=tmp_path / "cache").cached
    assert not caplog.records and not damaged_copies(meta)


def test_a_manifest_that_is_no_json_object_is_said(tmp_path, table, caplog):
    prepare_table(table, cache_dir=tmp_path / "cache")
    meta = meta_of(tmp_path / "cache", "tables")
    meta.write_text("[2]", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert not prepare_table(table, cache_dir=tmp_path / "cache").cached
    assert "Expected `object`, got `array`" in caplog.text and damaged_copies(meta)


# ---------------------------------------------------------------- a prepared test table
def test_a_test_tables_manifest_reads_as_before_and_a_damaged_one_is_said(tmp_path, table,
                                                                         caplog):
    exam = tmp_path / "exam.csv"
    exam.write_text("kind,color,b,a\ndog,blue,25,2.5\ncat,green,5,0\n", encoding="utf-8")
    train = prepare_table(table, cache_dir=tmp_path / "cache", whole=True)

    def tested():
        return prepare_table_test(str(exam), train.train, train.schema,
                                  cache_dir=tmp_path / "cache")

    first = tested()
    meta = meta_of(tmp_path / "cache", table_test.TESTS)
    meta.write_text(json.dumps({"format": 1, "rows": 1, "skipped": {
        "counts": {table_test.UNSEEN: 1}, "examples": {table_test.UNSEEN: ["row 2"]}},
        "source": str(exam), "train": train.schema.key}, indent=1), encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="computeshare_desktop.data.table_test"):
        again = tested()  # the previous version's file: from the cache, the skip said
    assert "prepared 1 test rows" not in caplog.text and "row 2" in caplog.text
    assert torch.equal(again.images, first.images) and not damaged_copies(meta)
    text = edit(meta, skipped={"counts": {"x": "one"}, "examples": {}})
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="computeshare_desktop"):
        assert torch.equal(tested().images, first.images)
    assert "prepared 1 test rows" in caplog.text  # prepared again
    assert "Expected `int`, got `str` - at `$.skipped.counts[...]`" in caplog.text
    assert [k.read_text(encoding="utf-8") for k in damaged_copies(meta)] == [text]


# ---------------------------------------------------------------- a folder of images
def write_folder(root: Path) -> None:
    for i, name in enumerate(("a", "b")):
        (root / name).mkdir(parents=True)
        for j in range(4):
            Image.new("L", (8, 8), 40 * i + j).save(root / name / f"{j}.png")


def test_an_image_manifest_reads_as_before_and_a_damaged_one_is_said(tmp_path, caplog):
    write_folder(tmp_path / "d")
    first = prepare_folder(tmp_path / "d", cache_dir=tmp_path / "cache")
    [meta] = (tmp_path / "cache").rglob("meta.json")
    data = json.loads(meta.read_text(encoding="utf-8"))
    assert data["format"] == image_cache.FORMAT and data["channels"] == 1
    meta.write_text(json.dumps(data, indent=1), encoding="utf-8")  # as json.dumps wrote it
    second = prepare_folder(tmp_path / "d", cache_dir=tmp_path / "cache")
    assert second.cached and second.train.info == first.train.info
    assert torch.equal(second.train.images, first.train.images)
    for values, said in [({"height": 0}, "Expected `int` >= 1 - at `$.height`"),
                         ({"classes": "ab"}, "Expected `array`, got `str` - at `$.classes`"),
                         ({"std": [0.0]}, "std must be positive")]:
        text = edit(meta, **{**data, **values})
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert not prepare_folder(tmp_path / "d", cache_dir=tmp_path / "cache").cached
        assert said in caplog.text
        assert text in [k.read_text(encoding="utf-8") for k in damaged_copies(meta)]
    assert prepare_folder(tmp_path / "d", cache_dir=tmp_path / "cache").cached


# ---------------------------------------------------------------- a saved dataset's state
def test_a_splits_state_json_keys_the_cache_and_a_damaged_one_is_said(tmp_path, caplog):
    folder = tmp_path / "train"
    folder.mkdir()
    (folder / "data-00000-of-00001.arrow").write_bytes(b"1234")
    state = {"_data_files": [{"filename": "data-00000-of-00001.arrow"}],
             "_fingerprint": "f00d", "_format_type": None, "_split": "train"}
    (folder / hf.STATE).write_text(json.dumps(state, indent=2), encoding="utf-8")
    split = hf.Split("train", None, folder)
    where, fingerprint, files = hf._stamp(split)
    assert (where, fingerprint) == (str(folder), "f00d")
    assert [f[:2] for f in files] == [["data-00000-of-00001.arrow", 4]]
    (folder / hf.STATE).write_text(json.dumps({**state, "_data_files": [{"file": 1}]}),
                                   encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert hf._stamp(split) == [str(folder), None, []]
    assert "missing required field `filename` - at `$._data_files[0]`" in caplog.text
    assert not damaged_copies(folder / hf.STATE)  # the dataset's file: nothing written
    (folder / hf.STATE).unlink()
    assert hf._stamp(split) == [str(folder), None, []]

