"""A folder of images as a session's data: both layouts, the
formats, the image size, the cache and every kind of bad data, on folders the tests write
themselves with Pillow."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from computeshare_desktop.data.folders import (EMPTY_CLASS, NOT_IMAGE, UNKNOWN_CLASS,
                                               UNREADABLE, scan)
from computeshare_desktop.data.prepared import PrepareCancelled, prepare_folder
from computeshare_desktop.errors import ConfigError


def write_image(path: Path, value: int, size: tuple[int, int] = (12, 12),
                mode: str = "L") -> Path:
    """A flat image of ``value`` (a colour image: value in red, its inverse in blue)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "L":
        image = Image.new("L", size, value)
    else:
        image = Image.new("RGB", size, (value, 128, 255 - value))
    image.save(path)
    return path


def write_classes(root: Path, counts: dict[str, int], suffix: str = ".png",
                  size: tuple[int, int] = (12, 12)) -> None:
    """``counts[c]`` images in ``root/c``, class c's pixels 40 × its place."""
    for i, (name, count) in enumerate(sorted(counts.items())):
        for j in range(count):
            write_image(root / name / f"{j:03d}{suffix}", 40 * i + j, size)


def prepare(root: Path, cache: Path, **kwargs):
    return prepare_folder(root, cache_dir=cache, **kwargs)


def test_train_and_test_folders_keep_their_split_and_sorted_class_names(tmp_path):
    write_classes(tmp_path / "d" / "train", {"cat": 3, "ant": 2, "bee": 2})
    write_classes(tmp_path / "d" / "test", {"cat": 1, "ant": 1, "bee": 1})
    data = prepare(tmp_path / "d", tmp_path / "cache")
    assert data.train.info.classes == ("ant", "bee", "cat")
    assert data.train.info.name == "d" and data.train.info.shape == (1, 12, 12)
    assert len(data.train) == 7 and len(data.test) == 3
    assert data.train.labels.tolist() == [0, 0, 1, 1, 2, 2, 2]
    assert data.test.labels.tolist() == [0, 1, 2]
    # class ant's first image has value 0 and bee's first 40 (write_classes' order)
    assert int(data.train.images[2].max()) == 40 and data.skipped.counts == {}


def test_one_folder_holds_out_a_stratified_split_by_a_fixed_seed(tmp_path):
    write_classes(tmp_path / "d", {"a": 10, "b": 20})
    first = scan(tmp_path / "d", 0.1)
    again = scan(tmp_path / "d", 0.1)
    assert [e.path for e in first.test] == [e.path for e in again.test]
    assert sorted(e.label for e in first.test) == [0, 1, 1]  # a tenth of each class
    assert len(first.train) == 27 and not first.split_by_folder
    assert not {e.path for e in first.train} & {e.path for e in first.test}
    assert sorted(e.label for e in scan(tmp_path / "d", 0.5).test) == [0] * 5 + [1] * 10


def test_formats_gray_and_colour_mixed_become_three_channels(tmp_path):
    root = tmp_path / "d"
    for i, suffix in enumerate((".png", ".jpg", ".bmp", ".webp")):
        write_image(root / "train" / "gray" / f"g{suffix}", 200, mode="L")
        write_image(root / "train" / "colour" / f"c{suffix}", 10 * i, mode="RGB")
    write_image(root / "test" / "gray" / "g.png", 200, mode="L")
    write_image(root / "test" / "colour" / "c.png", 0, mode="RGB")
    data = prepare(root, tmp_path / "cache")
    assert data.train.info.shape == (3, 12, 12) and len(data.train) == 8
    gray = data.train.images[data.train.labels == 1]
    assert (gray[:, 0] == gray[:, 2]).all()  # a gray image's channels are equal
    info = data.train.info
    pixels = data.train.images.to(torch.float64) / 255
    assert info.mean == pytest.approx(pixels.mean(dim=(0, 2, 3)).tolist(), abs=1e-5)
    assert info.std == pytest.approx(pixels.std(dim=(0, 2, 3), correction=0).tolist(),
                                     abs=1e-5)


def test_all_gray_is_one_channel_and_one_shared_size_is_kept(tmp_path):
    write_classes(tmp_path / "d", {"a": 3, "b": 3}, size=(28, 20))
    data = prepare(tmp_path / "d", tmp_path / "cache")
    assert data.train.info.shape == (1, 20, 28)


def test_image_size_keeps_the_aspect_and_crops_the_middle(tmp_path):
    root = tmp_path / "d"
    wide = Image.new("L", (30, 10), 0)
    wide.paste(255, (10, 0, 20, 10))  # a bright middle third
    for name in ("a", "b"):
        for j in range(2):
            (root / name).mkdir(parents=True, exist_ok=True)
            wide.save(root / name / f"{j}.png")
    write_image(root / "a" / "small.png", 255, size=(5, 5))  # another size: 224 unless told
    data = prepare(root, tmp_path / "cache", image_size=10)
    assert data.train.info.shape == (1, 10, 10)
    assert int(data.train.images[0].min()) >= 250  # only the bright middle is left
    assert prepare(root, tmp_path / "cache").train.info.shape == (1, 224, 224)


def test_a_second_load_comes_from_the_cache_and_an_edit_prepares_again(tmp_path):
    write_classes(tmp_path / "d", {"a": 4, "b": 4})
    first = prepare(tmp_path / "d", tmp_path / "cache")
    second = prepare(tmp_path / "d", tmp_path / "cache")
    assert not first.cached and second.cached
    assert torch.equal(first.train.images, second.train.images)
    assert torch.equal(first.test.labels, second.test.labels)
    path = tmp_path / "d" / "a" / "000.png"
    write_image(path, 255)
    os.utime(path, ns=(1, 1))
    third = prepare(tmp_path / "d", tmp_path / "cache")
    assert not third.cached and int(third.train.images.max()) == 255


def test_bad_data_is_skipped_counted_and_named_without_shifting_labels(tmp_path, caplog):
    root = tmp_path / "d"
    write_classes(root / "train", {"a": 3, "c": 3})
    write_classes(root / "test", {"a": 1, "c": 1, "b": 2})  # b: no training images
    (root / "train" / "b").mkdir()  # an empty class folder
    (root / "train" / "a" / "notes.txt").write_text("hi", encoding="utf-8")
    (root / "train" / "c" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not a png")
    full = write_image(root / "train" / "c" / "cut.png", 7, size=(40, 40))
    full.write_bytes(full.read_bytes()[:60])  # truncated
    (root / "train" / "c" / ".DS_Store").write_bytes(b"")  # nobody's mistake: not counted
    with caplog.at_level(logging.INFO):  # the details go to the log file, at INFO
        data = prepare(root, tmp_path / "cache")
    assert data.train.info.classes == ("a", "c")
    assert data.train.labels.tolist() == [0, 0, 0, 1, 1, 1]
    assert data.test.labels.tolist() == [0, 1]
    skipped = data.skipped
    assert skipped.counts == {NOT_IMAGE: 1, EMPTY_CLASS: 1, UNKNOWN_CLASS: 2, UNREADABLE: 2}
    assert skipped.examples[NOT_IMAGE] == ["train/a/notes.txt"]
    assert skipped.examples[EMPTY_CLASS] == ["train/b/"]
    assert sorted(skipped.examples[UNREADABLE]) == ["train/c/broken.png", "train/c/cut.png"]
    assert "skipped 2 (a test image of a class with no training images): test/b/000.png, " \
           "test/b/001.png" in caplog.text
    assert prepare(root, tmp_path / "cache").skipped.counts == skipped.counts  # cached too


def test_examples_stop_at_five(tmp_path):
    write_classes(tmp_path / "d", {"a": 2, "b": 2})
    for i in range(7):
        (tmp_path / "d" / "a" / f"{i}.txt").write_text("x", encoding="utf-8")
    data = prepare(tmp_path / "d", tmp_path / "cache")
    assert data.skipped.counts[NOT_IMAGE] == 7 and len(data.skipped.examples[NOT_IMAGE]) == 5
    assert data.skipped.lines()[0].endswith(", …")


@pytest.mark.parametrize("counts", [{"a": 4}, {"a": 4, "empty": 0}, {}])
def test_fewer_than_two_classes_is_refused_with_the_reason(tmp_path, counts):
    root = tmp_path / "d"
    root.mkdir()
    write_classes(root, {k: v for k, v in counts.items() if v})
    for name in (k for k, v in counts.items() if not v):
        (root / name).mkdir()
    with pytest.raises(ConfigError, match="a classifier needs 2 or more"):
        prepare(root, tmp_path / "cache")


def test_classes_whose_images_all_fail_to_decode_are_refused(tmp_path):
    root = tmp_path / "d"
    write_classes(root, {"a": 3})
    for i in range(3):
        (root / "b").mkdir(exist_ok=True)
        (root / "b" / f"{i}.png").write_bytes(b"garbage")
    with pytest.raises(ConfigError, match="in 1 class"):
        prepare(root, tmp_path / "cache")


def test_a_cancelled_preparation_caches_nothing(tmp_path):
    write_classes(tmp_path / "d", {"a": 3, "b": 3})
    with pytest.raises(PrepareCancelled):
        prepare(tmp_path / "d", tmp_path / "cache", cancel=lambda: True)
    assert not prepare(tmp_path / "d", tmp_path / "cache").cached


def test_progress_is_reported_to_the_last_image(tmp_path):
    write_classes(tmp_path / "d", {"a": 3, "b": 3})
    seen = []
    prepare(tmp_path / "d", tmp_path / "cache", progress=seen.append)
    assert seen[-1].done == seen[-1].total == 6 and "6 of 6" in seen[-1].text


def test_the_cache_is_a_memory_map_of_the_decoded_bytes(tmp_path):
    write_classes(tmp_path / "d", {"a": 3, "b": 3})
    data = prepare(tmp_path / "d", tmp_path / "cache")
    files = list((tmp_path / "cache" / "folders").glob("*/images.u8"))
    assert len(files) == 1
    raw = np.fromfile(files[0], dtype=np.uint8)
    assert raw.size == 6 * 144
    assert torch.equal(torch.cat([data.train.images, data.test.images]).flatten(),
                       torch.from_numpy(raw))


def test_the_dataset_option_takes_a_folder_and_others_see_only_its_name(tmp_path):
    from computeshare_desktop.data.folders import dataset_label
    from computeshare_desktop.hub.config import SessionOptions, session_config

    write_classes(tmp_path / "my photos", {"a": 2, "b": 2})
    spec = str(tmp_path / "my photos")
    assert session_config(SessionOptions(dataset=spec, preset="lan")).dataset == spec
    assert dataset_label(spec) == "my-photos" and dataset_label("mnist") == "mnist"
    with pytest.raises(ConfigError, match="no such folder or file: .*missing"):
        session_config(SessionOptions(dataset=str(tmp_path / "missing"), preset="lan"))
