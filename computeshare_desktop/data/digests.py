"""The digests that let a worker keep its shard: the content hash of a training split, and
the digest of a range of samples. The hub and the worker compute them alike, so equal
digests mean equal bytes (sha256, hex).

A range's digest covers its samples' bytes (uint8 images, or a table's float32 rows) and
then its labels (int64), both C-contiguous in the machine's byte order, which every
platform ComputeShare runs on shares (little-endian).
"""

from __future__ import annotations

import hashlib
import threading
import weakref

import torch

from .arrays import ArrayDataset

STEP_BYTES = 64 * 1024 * 1024  # of the samples hashed at a time: memory stays bounded
# By the samples tensor's id, while that tensor lives (tensors compare by value, so they
# cannot be a WeakKeyDictionary's keys).
_memo: dict[int, tuple[weakref.ref[torch.Tensor], str]] = {}
_memo_lock = threading.Lock()


def _feed(digest: hashlib._Hash, tensor: torch.Tensor) -> None:
    """Add ``tensor``'s bytes, a slice at a time (a memory-mapped split is read in steps)."""
    flat = tensor.reshape(len(tensor), -1) if tensor.dim() > 1 else tensor.reshape(-1, 1)
    per_row = max(1, flat.shape[1] * flat.element_size())
    rows = max(1, STEP_BYTES // per_row)
    for start in range(0, len(flat), rows):
        part = flat[start:start + rows].contiguous()
        digest.update(part.numpy().data if part.numel() else b"")


def chunk_digest(images: torch.Tensor, labels: torch.Tensor) -> str:
    """The sha256 of a range of samples: their bytes, then their labels' (int64)."""
    digest = hashlib.sha256()
    _feed(digest, images.cpu())
    _feed(digest, labels.cpu().to(torch.int64))
    return digest.hexdigest()


def content_hash(data: ArrayDataset) -> str:
    """The training split's content hash: its shape, its samples and its labels.

    Computed once per dataset object (a resumed session in the same process reuses it):
    ~1 GB/s, so a 15 GB folder costs about 15 s when its session opens.
    """
    with _memo_lock:
        known = _memo.get(id(data.images))
    if known is not None and known[0]() is data.images:
        return known[1]
    digest = hashlib.sha256()
    digest.update(repr((str(data.images.dtype), tuple(data.images.shape))).encode("ascii"))
    _feed(digest, data.images)
    _feed(digest, data.labels)
    value = digest.hexdigest()
    with _memo_lock:
        for key in [k for k, (ref, _) in _memo.items() if ref() is None]:
            del _memo[key]
        _memo[id(data.images)] = (weakref.ref(data.images), value)
    return value
