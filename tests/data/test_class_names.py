"""Every dataset names its classes in output order (classes.json, predict): torchvision's
own names where its classes carry them (read without any data file), the well-known lists
elsewhere."""

from __future__ import annotations

import pytest
import torchvision.datasets as tv

from computeshare_desktop.data import DATASETS, DatasetInfo, dataset_info


@pytest.mark.parametrize("name", DATASETS)
def test_each_dataset_names_each_class_once(name):
    info = dataset_info(name)
    assert len(info.class_names) == info.num_classes == len(set(info.class_names))
    assert all(isinstance(c, str) and c for c in info.class_names)


@pytest.mark.parametrize("name, names", [
    ("mnist", tv.MNIST.classes),
    ("fashion-mnist", tv.FashionMNIST.classes),
    ("kmnist", tv.KMNIST.classes),
    ("emnist", tv.EMNIST.classes_split_dict["balanced"]),
])
def test_torchvisions_own_names(name, names):
    assert list(dataset_info(name).class_names) == list(names)


def test_the_other_sets():
    assert dataset_info("mnist-sample").class_names == tuple("0123456789")
    assert dataset_info("svhn").class_names == tuple("0123456789")  # torchvision maps 10 to 0
    assert dataset_info("cifar10").class_names[:3] == ("airplane", "automobile", "bird")
    cifar100 = dataset_info("cifar100").class_names
    assert list(cifar100) == sorted(cifar100)  # CIFAR-100's fine labels are alphabetical
    assert (cifar100[0], cifar100[30], cifar100[99]) == ("apple", "dolphin", "worm")


def test_an_info_without_names_numbers_its_classes():
    info = DatasetInfo("x", 1, 8, 8, 3, (0.5,), (0.25,))
    assert info.class_names == ("0", "1", "2")
    with pytest.raises(ValueError, match="2 class names for 3 classes"):
        DatasetInfo("x", 1, 8, 8, 3, (0.5,), (0.25,), ("a", "b"))
