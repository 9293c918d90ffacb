"""A Hugging Face dataset saved with ``save_to_disk`` as a session's data: how it
is known, its splits, its columns (defaults and named), its classes, the cache, progress
and cancel, and the refusals; on tiny datasets the tests write themselves."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from computeshare_desktop.data.folders import UNKNOWN_CLASS, UNREADABLE
from computeshare_desktop.data.hf import HF_EXTRA, NO_LABEL, is_hf_spec, prepare_hf
from computeshare_desktop.data.prepared import PrepareCancelled, load_data
from computeshare_desktop.errors import ConfigError

datasets = pytest.importorskip("datasets")

NAMES = ["cat", "ant", "bee"]  # a ClassLabel's own order, not sorted: labels keep it


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))


def pictures(labels: list[int], size: tuple[int, int] = (10, 8), mode: str = "L"):
    """One flat image per label, its value 60 × the label plus its place."""
    return [Image.new(mode, size, 60 * label + i) for i, label in enumerate(labels)]


def image_set(labels: list[int], *, label=None, image="img", **extra):
    """A Dataset of gray images and a label column (a ClassLabel of NAMES by default)."""
    label = label if label is not None else datasets.ClassLabel(names=NAMES)
    features = {image: datasets.Image(), "label": label}
    values = {image: pictures(labels), "label": labels}
    for name, (feature, column) in extra.items():
        features[name], values[name] = feature, column
    return datasets.Dataset.from_dict(values, features=datasets.Features(features))


def saved(data, path: Path) -> Path:
    data.save_to_disk(str(path))
    return path


def prepare(path: Path, tmp_path: Path, **kwargs):
    return prepare_hf(path, cache_dir=tmp_path / "cache", **kwargs)


def test_a_saved_dataset_and_dataset_dict_are_known_by_their_metadata_files(tmp_path):
    one = saved(image_set([0, 1, 2]), tmp_path / "one")
    both = saved(datasets.DatasetDict(train=image_set([0, 1]), test=image_set([1])),
                 tmp_path / "both")
    (tmp_path / "plain" / "a").mkdir(parents=True)
    assert is_hf_spec(str(one)) and is_hf_spec(str(both))
    assert not is_hf_spec(str(tmp_path / "plain")) and not is_hf_spec("mnist-sample")
    assert not is_hf_spec(str(both / "dataset_dict.json")) and not is_hf_spec("")


def test_its_own_train_and_test_splits_keep_the_classlabel_names_and_labels(tmp_path):
    path = saved(datasets.DatasetDict(train=image_set([0, 1, 2, 2, 1]),
                                      test=image_set([2, 0])), tmp_path / "pets")
    data = prepare(path, tmp_path)
    info = data.train.info
    assert info.name == "pets" and info.classes == tuple(NAMES) and info.shape == (1, 8, 10)
    assert data.train.labels.tolist() == [0, 1, 2, 2, 1]
    assert data.test.labels.tolist() == [2, 0]  # in row order, the names kept
    assert int(data.train.images[3].max()) == 60 * 2 + 3  # row 3: label 2, place 3
    assert not data.cached and prepare(path, tmp_path).cached


def test_validation_tests_when_there_is_no_test_split(tmp_path):
    path = saved(datasets.DatasetDict(train=image_set([0, 1, 2]),
                                      validation=image_set([1, 1])), tmp_path / "v")
    data = prepare(path, tmp_path)
    assert len(data.train) == 3 and data.test.labels.tolist() == [1, 1]


def test_one_dataset_holds_out_a_stratified_split_by_the_folders_seed(tmp_path):
    labels = [0] * 10 + [1] * 10 + [2] * 20
    path = saved(image_set(labels), tmp_path / "one")
    data = prepare(path, tmp_path, test_fraction=0.1)
    assert torch.bincount(data.test.labels).tolist() == [1, 1, 2]
    assert torch.bincount(data.train.labels).tolist() == [9, 9, 18]
    again = prepare(path, tmp_path, test_fraction=0.1)
    assert again.cached and torch.equal(again.test.images, data.test.images)
    other = prepare(path, tmp_path, test_fraction=0.25)
    assert not other.cached and torch.bincount(other.test.labels).tolist() == [3, 3, 5]


def test_labels_without_a_classlabel_are_their_sorted_values(tmp_path):
    numbered = image_set([3, 1, 3, 1], label=datasets.Value("int64")).with_format("torch")
    data = prepare(saved(numbered, tmp_path / "numbered"), tmp_path, test_fraction=0.5)
    assert data.train.info.classes == ("1", "3")  # a saved torch format read as plain values
    words = saved(image_set([0, 1, 0, 1], label=datasets.Value("string")).cast_column(
        "label", datasets.Value("string")).map(
        lambda row: {"label": ["zebra", "apple"][int(row["label"])]}), tmp_path / "words")
    data = prepare(words, tmp_path, test_fraction=0.5)
    assert data.train.info.classes == ("apple", "zebra")
    numbers = datasets.Dataset.from_dict(
        {"img": pictures([0] * 4), "labels": [10, 2, 10, 2]},
        features=datasets.Features({"img": datasets.Image(), "labels": datasets.Value("int64")}))
    data = prepare(saved(numbers, tmp_path / "numbers"), tmp_path, test_fraction=0.5)
    assert data.train.info.classes == ("2", "10")  # as numbers: 2 before 10
    assert sorted(data.train.labels.tolist()) == [0, 1]


def test_named_columns_are_read_and_colour_images_keep_three_channels(tmp_path):
    rows = datasets.Dataset.from_dict(
        {"thumb": pictures([0, 1, 0, 1]), "photo": pictures([0, 1, 0, 1], (6, 6), "RGB"),
         "target": ["no", "yes", "no", "yes"], "label": [0, 0, 0, 0]},
        features=datasets.Features({"thumb": datasets.Image(), "photo": datasets.Image(),
                                    "target": datasets.Value("string"),
                                    "label": datasets.Value("int64")}))
    path = saved(rows, tmp_path / "named")
    data = prepare(path, tmp_path, input="photo", label="target", test_fraction=0.5,
                   image_size=4)
    assert data.train.info.shape == (3, 4, 4) and data.train.info.classes == ("no", "yes")
    with pytest.raises(ConfigError, match="1 class"):
        prepare(path, tmp_path)  # the first image column, and the column named label


def test_unlabelled_rows_and_unknown_test_classes_are_skipped_and_counted(tmp_path):
    train = image_set([0, 1, 0, 1], label=datasets.Value("string")).map(
        lambda row, i: {"label": ["a", "b"][i % 2]}, with_indices=True)
    test = datasets.Dataset.from_dict(
        {"img": pictures([0, 1, 2]), "label": ["b", "zz", "a"]},
        features=datasets.Features({"img": datasets.Image(), "label": datasets.Value("string")}))
    path = saved(datasets.DatasetDict(train=train, test=test), tmp_path / "odd")
    data = prepare(path, tmp_path)
    assert data.test.labels.tolist() == [1, 0]  # b, a: never shifted by the unknown zz
    assert data.skipped.counts == {UNKNOWN_CLASS: 1}
    assert data.skipped.examples[UNKNOWN_CLASS] == ["test[1]"]
    unlabelled = saved(image_set([0, -1, 1, 2, 0, 1, 2]), tmp_path / "gaps")
    data = prepare(unlabelled, tmp_path, test_fraction=0.3)
    assert data.skipped.counts == {NO_LABEL: 1} and len(data.train) + len(data.test) == 6


def test_an_image_that_does_not_decode_is_skipped_by_its_row(tmp_path):
    rows = datasets.Dataset.from_dict(
        {"img": [{"bytes": b"not an image", "path": None}] + pictures([1, 0, 1, 0, 1]),
         "label": [0, 1, 0, 1, 0, 1]},
        features=datasets.Features({"img": datasets.Image(),
                                    "label": datasets.ClassLabel(names=["a", "b"])}))
    data = prepare(saved(rows, tmp_path / "bad"), tmp_path, test_fraction=0.3)
    assert data.skipped.counts == {UNREADABLE: 1}
    assert data.skipped.examples[UNREADABLE] == ["train[0]"]
    assert len(data.train) + len(data.test) == 5


def test_refusals_name_what_is_wrong(tmp_path):
    path = saved(image_set([0, 1, 2]), tmp_path / "d")
    with pytest.raises(ConfigError, match=r"no column 'photo' \(--input\).*'img', 'label'"):
        prepare(path, tmp_path, input="photo")
    with pytest.raises(ConfigError, match=r"no column 'kind' \(--label\)"):
        prepare(path, tmp_path, label="kind")
    with pytest.raises(ConfigError, match=r"'label' .* holds ClassLabel \(int64\), not images"):
        prepare(path, tmp_path, input="label")
    nolabel = datasets.Dataset.from_dict(
        {"img": pictures([0, 1]), "kind": ["a", "b"]},
        features=datasets.Features({"img": datasets.Image(), "kind": datasets.Value("string")}))
    with pytest.raises(ConfigError, match="pass --label COLUMN"):
        prepare(saved(nolabel, tmp_path / "nolabel"), tmp_path)
    splits = datasets.DatasetDict(a=image_set([0, 1]), b=image_set([0, 1]))
    with pytest.raises(ConfigError, match="none named train"):
        prepare(saved(splits, tmp_path / "splits"), tmp_path)


def test_without_the_extra_the_error_says_what_to_install(tmp_path, monkeypatch):
    path = saved(image_set([0, 1, 2]), tmp_path / "d")
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` fails
    with pytest.raises(ConfigError, match=r"pip install 'computeshare-desktop\[hf\]'"):
        load_data(str(path))
    assert "computeshare-desktop[hf]" in HF_EXTRA


def test_progress_is_told_and_cancel_leaves_no_cache(tmp_path):
    path = saved(image_set([0, 1, 2] * 4), tmp_path / "d")
    seen, asked = [], []

    def cancel() -> bool:
        asked.append(1)
        return len(asked) > 3

    with pytest.raises(PrepareCancelled):
        prepare(path, tmp_path, cancel=cancel)
    assert not any((tmp_path / "cache" / "hf").rglob("meta.json"))
    data = prepare(path, tmp_path, progress=seen.append)
    assert not data.cached and seen[-1].done == seen[-1].total == 12
    assert seen[-1].text == "preparing d: 12 of 12 images"


def test_load_data_reads_a_saved_folder_as_a_dataset_spec(tmp_path):
    path = saved(datasets.DatasetDict(train=image_set([0, 1, 2]), test=image_set([0])),
                 tmp_path / "spec")
    train, test = load_data(str(path))
    assert len(train) == 3 and len(test) == 1 and train.info.classes == tuple(NAMES)
    assert (tmp_path / "cache" / "hf").is_dir()
    assert np.asarray(train.images).dtype == np.uint8


def feature_rows(count: int = 20, *, label=None, labels=None):
    """Two number columns and a text column of two values; x says the class."""
    labels = labels if labels is not None else [i % 2 for i in range(count)]
    count = len(labels)
    features = datasets.Features({"x": datasets.Value("float32"), "y": datasets.Value("int64"),
                                  "kind": datasets.Value("string"),
                                  "label": label or datasets.ClassLabel(names=["neg", "pos"])})
    return datasets.Dataset.from_dict(
        {"x": [float(v) + 0.1 * i for i, v in enumerate(labels)], "y": list(range(count)),
         "kind": ["red" if i % 3 else "blue" for i in range(count)], "label": labels},
        features=features)


def test_feature_columns_without_an_image_column_are_read_as_a_table(tmp_path):
    path = saved(feature_rows(), tmp_path / "rows")
    train, test = load_data(str(path), test_fraction=0.2)
    info = train.info
    assert info.kind == "table" and info.name == "rows" and info.classes == ("neg", "pos")
    assert info.shape == (4,)  # x, y and kind one-hot as two
    assert len(train) == 16 and len(test) == 4 and train.images.dtype == torch.float32
    assert abs(float(train.images.mean(dim=0).abs().max())) < 1e-4  # standardized on train
    again, _ = load_data(str(path), test_fraction=0.2)
    assert torch.equal(again.images, train.images)
    two, _ = load_data(str(path), input="x,y", test_fraction=0.2)
    assert two.info.shape == (2,) and two.info.classes == ("neg", "pos")


def test_a_tables_unlabelled_rows_own_test_split_and_odd_columns(tmp_path):
    gaps = saved(feature_rows(labels=[0, 1, -1, 0, 1, 0, 1, 0, 1, 1]), tmp_path / "gaps")
    train, test = load_data(str(gaps), test_fraction=0.2)
    assert len(train) + len(test) == 9
    both = saved(datasets.DatasetDict(train=feature_rows(), test=feature_rows(4)),
                 tmp_path / "both")
    train, test = load_data(str(both), test_fraction=0.2)
    assert (len(train), len(test)) == (20, 4)  # its own test split tests (table_test)
    nested = feature_rows().add_column("seq", [[1, 2]] * 20)
    with pytest.raises(ConfigError, match="'seq' holds"):
        load_data(str(saved(nested, tmp_path / "nested")))
    with pytest.raises(ConfigError, match="its test source is a table too"):
        load_data(str(gaps), test_spec=str(both))
