"""Data given from Python (``host(model, train=...)``): a map-style dataset read once into
an ArrayDataset (data.mapped), or a clear error that names the item."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from computeshare_desktop.data.mapped import dataset_valid, hold_out, python_name, read_dataset
from computeshare_desktop.errors import ConfigError


def read(items: list, **kwargs) -> object:
    return read_dataset(items, name="python:t", **kwargs)


def test_items_of_every_usual_kind_read_into_uint8_with_measured_statistics() -> None:
    items = [(torch.full((1, 2, 2), 1.0), 2), (np.zeros((2, 2), dtype=np.uint8), np.int64(0)),
             (Image.fromarray(np.full((2, 2), 51, dtype=np.uint8)), torch.tensor(1)),
             (torch.full((2, 2), 200, dtype=torch.int32), 1.0)]
    data = read(items)
    assert data.images.dtype == torch.uint8 and data.images.shape == (4, 1, 2, 2)
    assert data.images[:, 0, 0, 0].tolist() == [255, 0, 51, 200]
    assert data.labels.tolist() == [2, 0, 1, 1]
    info = data.info
    assert (info.name, info.shape, info.num_classes) == ("python:t", (1, 2, 2), 3)
    assert info.mean == (round((255 + 51 + 200) / 4 / 255, 6),)
    assert info.class_names == ("0", "1", "2")


def test_class_names_and_a_test_set_that_must_match_the_training_one() -> None:
    train = read([(torch.zeros(3, 4, 4), 0)] * 3, classes=["cat", "dog"])
    assert train.info.classes == ("cat", "dog") and train.info.std == (0.001,) * 3
    test = read_dataset([(torch.ones(3, 4, 4), 1)], name="x", info=train.info, what="test")
    assert test.info is train.info
    with pytest.raises(ConfigError, match="test data has label 2, past its 2 classes"):
        read_dataset([(torch.ones(3, 4, 4), 2)], name="x", info=train.info, what="test")
    with pytest.raises(ConfigError, match="label 2, past the 2 class names"):
        read([(torch.zeros(1, 2, 2), 2)], classes=["a", "b"])


@pytest.mark.parametrize("items,words", [
    ([(torch.full((1, 2, 2), 1.5), 0)], "values in \\[1.5, 1.5\\]: float images must be in"),
    ([(torch.full((1, 2, 2), float("nan")), 0)], "float images must be in \\[0, 1\\]"),
    ([(torch.zeros(1, 2, 2), -1)], "label is -1"),
    ([(torch.zeros(1, 2, 2), 0.5)], "label is 0.5"),
    ([(torch.zeros(1, 2, 2), "cat")], "label is 'cat'"),
    ([torch.zeros(1, 2, 2)], "item 0 is a Tensor, not \\(image, label\\)"),
    ([(torch.zeros(1, 1, 2, 2), 0)], "image is 1×1×2×2: give C×H×W"),  # 1-D: a table's row
    ([(torch.full((1, 2, 2), 300), 0)], "image is torch.int64: give float"),
    ([], "train data is empty"),
])
def test_items_that_are_not_images_and_labels_are_clear_errors(items, words) -> None:
    with pytest.raises(ConfigError, match=words):
        read(items)


def test_a_held_out_tenth_and_names() -> None:
    data = read([(torch.zeros(1, 2, 2), i % 2) for i in range(30)])
    train, test = hold_out(data, 0.1, seed=0)
    assert (len(train), len(test)) == (27, 3) and train.info is data.info
    assert python_name("My Data/set") == "python:My-Data-set" and python_name("") == "python:data"
    assert dataset_valid("python:x") and dataset_valid("mnist") and not dataset_valid("python:")
    assert not dataset_valid("x")
