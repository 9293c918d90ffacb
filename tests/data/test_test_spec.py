"""A second source for the test split (``--test SPEC``): a folder of CLASS/* images
or a saved Hugging Face dataset tests instead of the split the training data gives; its
classes map to the training classes by name, its images to the training shape. The last
test trains a session on a saved dataset tested by a folder, through the Python API, and
evaluates it again from its session.json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from computeshare_desktop import host
from computeshare_desktop.data.folders import UNKNOWN_CLASS
from computeshare_desktop.data.prepared import load_data
from computeshare_desktop.data.second_source import prepare_test
from computeshare_desktop.errors import ConfigError

from helpers.cli import run_cli
from helpers.nets import BandNet  # the same 12×12, 3-class net

datasets = pytest.importorskip("datasets")

ROWS = {"high": 0, "low": 8, "middle": 4, "zebra": 2}  # a band's row says the class


@pytest.fixture(autouse=True)
def private_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("COMPUTESHARE_PIN", raising=False)


def band(name: str, rng: np.random.Generator, size: int = 12, mode: str = "L") -> Image.Image:
    """Noise with a bright band whose row (as a share of the side) says the class."""
    pixels = rng.integers(0, 100, (size, size), dtype=np.uint8)
    row = ROWS[name] * size // 12
    pixels[row:row + size // 3] += 150
    image = Image.fromarray(pixels)
    return image.convert("RGB") if mode == "RGB" else image


def write_folder(root: Path, counts: dict[str, int], seed: int = 0, **kwargs) -> Path:
    rng = np.random.default_rng(seed)
    for name, count in counts.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        for j in range(count):
            band(name, rng, **kwargs).save(root / name / f"{j}.png")
    return root


def write_saved(root: Path, counts: dict[str, int], seed: int = 0) -> Path:
    """A Dataset of bands with a ClassLabel in its own (unsorted) order."""
    rng = np.random.default_rng(seed)
    names = ["middle", "high", "low"]
    labels = [names.index(n) for n, count in counts.items() for _ in range(count)]
    images = [band(names[i], rng) for i in labels]
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=names)})
    datasets.Dataset.from_dict({"image": images, "label": labels},
                               features=features).save_to_disk(str(root))
    return root


def test_a_test_folder_replaces_the_held_out_split_and_maps_classes_by_name(tmp_path):
    train_dir = write_folder(tmp_path / "train", {"high": 5, "low": 5, "middle": 5})
    test_dir = write_folder(tmp_path / "exam", {"low": 2, "middle": 1, "zebra": 3}, seed=1,
                            size=24, mode="RGB")  # bigger and in colour: brought to 1×12×12
    train, test = load_data(str(train_dir), test_spec=str(test_dir))
    assert len(train) == 15  # nothing held out: another source tests
    assert train.info.classes == ("high", "low", "middle")
    assert test.info is train.info and test.images.shape == (3, 1, 12, 12)
    assert test.labels.tolist() == [1, 1, 2]  # low, low, middle: zebra never shifts them
    rows = test.images[:, 0].float().mean(dim=2)  # each row's mean: the band is at row 8
    assert int(rows[0].argmax()) in range(8, 12)


def test_unknown_test_classes_are_counted(tmp_path):
    train_dir = write_folder(tmp_path / "train", {"high": 2, "low": 2})
    test_dir = write_folder(tmp_path / "exam", {"low": 1, "zebra": 3})
    train, _ = load_data(str(train_dir), test_spec=str(test_dir))
    from computeshare_desktop.data.folders import class_files
    found, skipped = class_files(test_dir)
    assert sorted(found) == ["low", "zebra"] and skipped.counts == {}
    test = prepare_test(str(test_dir), train.info, cache_dir=tmp_path / "other")
    assert test.labels.tolist() == [1]
    meta = next((tmp_path / "other" / "tests").rglob("meta.json"))
    counts = json.loads(meta.read_text(encoding="utf-8"))["skipped"]["counts"]
    assert counts == {UNKNOWN_CLASS: 3}


def test_train_and_test_folders_train_on_train_only_when_another_source_tests(tmp_path):
    root = tmp_path / "split"
    write_folder(root / "train", {"high": 3, "low": 3})
    write_folder(root / "test", {"high": 4, "low": 4})
    exam = write_folder(tmp_path / "exam", {"high": 1, "low": 1})
    train, test = load_data(str(root), test_spec=str(exam))
    assert len(train) == 6 and len(test) == 2


def test_a_saved_dataset_tests_a_folder_and_a_folder_tests_a_saved_dataset(tmp_path):
    folder = write_folder(tmp_path / "bands", {"high": 4, "low": 4, "middle": 4})
    saved = write_saved(tmp_path / "saved", {"high": 2, "middle": 1})
    train, test = load_data(str(folder), test_spec=str(saved))
    assert test.labels.tolist() == [0, 0, 2]  # high, high, middle by name, not by index
    train, test = load_data(str(saved), test_spec=str(folder))
    assert train.info.classes == ("middle", "high", "low") and len(train) == 3
    assert test.labels.tolist() == [1] * 4 + [2] * 4 + [0] * 4  # folder order: high, low, middle


def test_a_built_in_dataset_can_be_tested_by_a_folder_of_its_classes(tmp_path):
    rng = np.random.default_rng(0)
    for digit in ("3", "7", "seven"):
        (tmp_path / "digits" / digit).mkdir(parents=True)
        Image.fromarray(rng.integers(0, 255, (40, 30), dtype=np.uint8)).save(
            tmp_path / "digits" / digit / "a.png")
    train, test = load_data("mnist-sample", test_spec=str(tmp_path / "digits"))
    assert test.images.shape == (2, 1, 28, 28) and test.labels.tolist() == [3, 7]
    assert len(train) == len(load_data("mnist-sample")[0])


def test_a_test_source_that_is_not_one_is_refused(tmp_path):
    folder = write_folder(tmp_path / "bands", {"high": 2, "low": 2})
    with pytest.raises(ConfigError, match="not a folder of CLASS/"):
        load_data(str(folder), test_spec=str(tmp_path / "missing"))
    none_known = write_folder(tmp_path / "exam", {"zebra": 2})
    with pytest.raises(ConfigError, match="no image of a training class .*: high, low"):
        load_data(str(folder), test_spec=str(none_known))


def test_a_session_trains_on_a_saved_dataset_tested_by_a_folder(tmp_path, capsys):
    saved = write_saved(tmp_path / "saved", {"high": 20, "low": 20, "middle": 20})
    exam = write_folder(tmp_path / "exam", {"high": 3, "low": 3, "middle": 3}, seed=5)
    run = host(BandNet(), str(saved), test=str(exam), rounds=20, workers=1,
               this_machine_trains=True, eval_every=0, out_dir=tmp_path / "run", port=0,
               bind="127.0.0.1", advertise=False, quiet=True, preset="lan", batch_size=16,
               lr=0.05)
    result = run.wait(60)
    assert result.metrics.accuracy is not None and result.metrics.accuracy > 0.8
    classes = json.loads((result.out_dir / "classes.json").read_text(encoding="utf-8"))
    assert classes == ["middle", "high", "low"]  # the ClassLabel's order
    config = json.loads((result.out_dir / "session.json").read_text(encoding="utf-8"))
    assert config["config"]["test_data"] == str(exam)
    capsys.readouterr()
    assert run_cli(["evaluate", str(result.out_dir / "trained_model.pt2"), "--json"]) == 0
    score = json.loads(capsys.readouterr().out)
    assert score["samples"] == 9 and score["accuracy"] == pytest.approx(
        result.metrics.accuracy, abs=1e-6)
    with pytest.raises(TypeError, match="both specs"):
        host(BandNet(), str(saved), test=[(torch.zeros(1, 12, 12), 0)], quiet=True)
