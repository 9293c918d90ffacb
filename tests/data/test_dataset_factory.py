"""load_dataset on fake torchvision caches, offline errors, names and splits; never online."""

from __future__ import annotations

import pickle
import urllib.error
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from computeshare_desktop.data import (
    DATASETS,
    DatasetInfo,
    dataset_info,
    default_cache_dir,
    load_dataset,
)
from computeshare_desktop.errors import ConfigError, DatasetUnavailableError
from helpers.data import no_network, write_idx  # noqa: F401 (autouse: loopback only)

N = 20


def _fake_images(rng: np.random.Generator, n: int = N) -> np.ndarray:
    return rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)


def _write_mnist_like(root: Path, folder: str, rng: np.random.Generator) -> dict[str, Any]:
    arrays: dict[str, Any] = {}
    for prefix in ("train", "t10k"):
        images, labels = _fake_images(rng), rng.integers(0, 10, size=N, dtype=np.uint8)
        write_idx(root / folder / "raw" / f"{prefix}-images-idx3-ubyte", images)
        write_idx(root / folder / "raw" / f"{prefix}-labels-idx1-ubyte", labels)
        arrays[prefix] = (images, labels)
    return arrays


MNIST_LIKE = [("mnist", "MNIST"), ("fashion-mnist", "FashionMNIST"), ("kmnist", "KMNIST")]


@pytest.mark.parametrize(("name", "folder"), MNIST_LIKE)
def test_mnist_like_from_fake_cache(tmp_path: Path, name: str, folder: str) -> None:
    arrays = _write_mnist_like(tmp_path, folder, np.random.default_rng(0))
    for split, prefix in (("train", "train"), ("test", "t10k")):
        ds = load_dataset(name, split, root=tmp_path, download=False)
        images, labels = arrays[prefix]
        assert ds.images.shape == (N, 1, 28, 28) and ds.images.dtype == torch.uint8
        assert ds.images.is_contiguous()
        assert np.array_equal(ds.images[:, 0].numpy(), images)
        assert ds.labels.dtype == torch.int64 and ds.labels.tolist() == labels.tolist()
        assert ds.info == dataset_info(name)


def test_emnist_is_transposed_back(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    raw = tmp_path / "EMNIST" / "raw"
    stored = _fake_images(rng)  # EMNIST's files hold each image transposed
    labels = rng.integers(0, 47, size=N, dtype=np.uint8)
    write_idx(raw / "emnist-balanced-train-images-idx3-ubyte", stored)
    write_idx(raw / "emnist-balanced-train-labels-idx1-ubyte", labels)
    ds = load_dataset("emnist", "train", root=tmp_path, download=False)
    assert ds.images.shape == (N, 1, 28, 28) and ds.images.is_contiguous()
    assert np.array_equal(ds.images[:, 0].numpy(), stored.transpose(0, 2, 1))
    assert ds.labels.tolist() == labels.tolist()


def _skip_md5(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """Accept any existing file: real CIFAR/SVHN files are md5-checked."""
    import importlib

    target = importlib.import_module(f"torchvision.datasets.{module}")
    monkeypatch.setattr(target, "check_integrity", lambda path, md5=None: Path(path).is_file())


def _pickle(path: Path, obj: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj))


def test_cifar10_becomes_nchw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _skip_md5(monkeypatch, "cifar")
    rng = np.random.default_rng(2)
    folder = tmp_path / "cifar-10-batches-py"
    batches = {}
    for batch in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        rows = rng.integers(0, 256, size=(4, 3 * 32 * 32), dtype=np.uint8)
        labels = rng.integers(0, 10, size=4).tolist()
        _pickle(folder / batch, {"data": rows, "labels": labels})
        batches[batch] = (rows, labels)
    _pickle(folder / "batches.meta", {"label_names": [str(i) for i in range(10)]})
    ds = load_dataset("cifar10", "test", root=tmp_path, download=False)
    rows, labels = batches["test_batch"]
    assert ds.images.shape == (4, 3, 32, 32) and ds.images.is_contiguous()
    assert np.array_equal(ds.images.numpy(), rows.reshape(4, 3, 32, 32))
    assert ds.labels.dtype == torch.int64 and ds.labels.tolist() == labels
    assert len(load_dataset("cifar10", "train", root=tmp_path, download=False)) == 20


def test_svhn_labels_and_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scipy_io = pytest.importorskip("scipy.io")
    _skip_md5(monkeypatch, "svhn")
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, size=(5, 3, 32, 32), dtype=np.uint8)
    digits = np.array([10, 1, 2, 10, 9], dtype=np.uint8)  # SVHN files label zero as 10
    mat = {"X": images.transpose(2, 3, 1, 0), "y": digits[:, None]}
    scipy_io.savemat(str(tmp_path / "test_32x32.mat"), mat)
    ds = load_dataset("svhn", "test", root=tmp_path, download=False)
    assert ds.images.shape == (5, 3, 32, 32) and ds.images.is_contiguous()
    assert np.array_equal(ds.images.numpy(), images)
    assert ds.labels.tolist() == [0, 1, 2, 0, 9]


def test_offline_without_download(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailableError) as caught:
        load_dataset("cifar10", "train", root=tmp_path, download=False)
    message = str(caught.value)
    assert "\n" not in message and "mnist-sample" in message and str(tmp_path) in message


@pytest.mark.parametrize(("name", "module"), [("cifar10", "cifar"), ("mnist", "mnist")])
def test_offline_download_fails_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, module: str
) -> None:
    import importlib

    attempts: list[str] = []

    def offline(url: str, *args: Any, **kwargs: Any) -> None:
        attempts.append(url)
        raise urllib.error.URLError("offline")

    target = importlib.import_module(f"torchvision.datasets.{module}")
    monkeypatch.setattr(target, "download_and_extract_archive", offline)
    with pytest.raises(DatasetUnavailableError) as caught:
        load_dataset(name, "train", root=tmp_path, download=True)
    assert attempts  # the download path really ran, against the fake
    message = str(caught.value)
    assert "\n" not in message and "mnist-sample" in message and "offline" in message


def test_dataset_info_for_every_name() -> None:
    assert DATASETS == (
        "mnist-sample", "mnist", "fashion-mnist", "kmnist", "emnist", "cifar10", "cifar100", "svhn"
    )
    for name in DATASETS:
        info = dataset_info(name)
        assert isinstance(info, DatasetInfo) and info.name == name
        assert len(info.mean) == len(info.std) == info.channels
        assert (info.channels, info.height, info.width) in ((1, 28, 28), (3, 32, 32))
    assert dataset_info("emnist").num_classes == 47
    assert dataset_info("cifar100").num_classes == 100


def test_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cifar10"):
        dataset_info("imagenet")
    with pytest.raises(ConfigError, match="mnist-sample"):
        load_dataset("imagenet", "train", root=tmp_path)


@pytest.mark.parametrize("name", ["mnist-sample", "cifar10"])
def test_bad_split(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="split"):
        load_dataset(name, "validation", root=tmp_path)


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("COMPUTESHARE_DATA_DIR", raising=False)
    default = default_cache_dir()
    assert default.name == "datasets" and "computeshare" in str(default)
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path


def test_env_var_is_the_default_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _write_mnist_like(tmp_path, "MNIST", np.random.default_rng(4))
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path))
    assert len(load_dataset("mnist", "test", download=False)) == N
