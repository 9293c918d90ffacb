"""Dataset factory: uniform in-memory uint8 arrays for mnist-sample and torchvision datasets."""

from computeshare_desktop.data.arrays import ArrayDataset
from computeshare_desktop.data.factory import (DownloadProgress, clear_cache, default_cache_dir,
                                               download, is_available, load_dataset,
                                               needs_download)
from computeshare_desktop.data.info import DATASETS, DatasetInfo, dataset_info, normalize

__all__ = [
    "DATASETS",
    "ArrayDataset",
    "DatasetInfo",
    "DownloadProgress",
    "clear_cache",
    "dataset_info",
    "default_cache_dir",
    "download",
    "is_available",
    "load_dataset",
    "needs_download",
    "normalize",
]
