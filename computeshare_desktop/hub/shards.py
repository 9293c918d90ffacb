"""The hub's side of the shards: which samples each holds, and their chunks on the wire.

A shard is a list of indices into the training split (``sampling.shard_indices``), never a
copy of its samples: each SHARD request is answered from an index slice of at most
``MAX_SHARD_CHUNK_BYTES``, so a memory-mapped folder of any size is served in bounded
memory. A worker that holds a range in its cache says so with the range's digest
(``Shard.have``); when it is the hub's own digest of that range the reply is ``same``, with
empty frames, and no sample crosses the wire again.
"""

from __future__ import annotations

import torch

from ..data import ArrayDataset
from ..data.digests import chunk_digest, content_hash
from ..errors import RemoteProtocolError
from ..protocol import RejectCode
from ..protocol.messages import Shard, ShardData
from ..protocol.tensors import sample_dtype, tensor_to_frame
from ..protocol.wire import Frame
from ..sampling import shard_indices

MAX_SHARD_CHUNK_BYTES = 4 * 1024 * 1024
MAX_DIGESTS = 4096  # chunk digests remembered (64 hex digits each): a rejoin costs no rehash


class ShardServer:
    """Serves the shards of one training split, cut ``num_shards`` ways by ``seed``."""

    def __init__(self, train_set: ArrayDataset, num_shards: int, seed: int) -> None:
        self.train_set = train_set
        self.num_shards = num_shards
        self.seed = seed
        self.data_hash = content_hash(train_set)  # once per session, before any worker
        self._indices: dict[int, torch.Tensor] = {}
        self._digests: dict[tuple[int, int, int], str] = {}
        per_sample = max(1, train_set.images[0].numel() * train_set.images.element_size()) \
            if len(train_set) else 1
        self.chunk = max(1, MAX_SHARD_CHUNK_BYTES // per_sample)  # samples per reply at most

    def indices(self, shard: int) -> torch.Tensor:
        """The training split's positions that ``shard`` holds."""
        if shard not in self._indices:
            self._indices[shard] = shard_indices(len(self.train_set), self.num_shards, shard,
                                                 self.seed)
        return self._indices[shard]

    def size(self, shard: int) -> int:
        """How many samples ``shard`` holds."""
        return len(self.indices(shard))

    def reply(self, shard: int, msg: Shard) -> tuple[ShardData, Frame, Frame]:
        """The chunk of ``shard`` that ``msg`` asks for (at most ``chunk`` samples); empty
        frames and ``same`` when the worker's ``have`` is its digest.

        Raises:
            RemoteProtocolError(BAD_RANGE): a range outside the shard.
        """
        idx = self.indices(shard)
        if not (0 <= msg.offset < len(idx) and msg.count > 0):
            raise RemoteProtocolError(RejectCode.BAD_RANGE,
                                      f"offset {msg.offset}, count {msg.count} of {len(idx)}")
        count = min(msg.count, self.chunk, len(idx) - msg.offset)
        where = idx[msg.offset:msg.offset + count]
        images, labels = self.train_set.images[where], self.train_set.labels[where]
        shape = list(images.shape)
        if msg.have and msg.have == self._digest(shard, msg.offset, images, labels):
            return ShardData(offset=msg.offset, total=len(idx), image_shape=shape,
                             same=True, dtype=sample_dtype(images)), b"", b""
        return (ShardData(offset=msg.offset, total=len(idx), image_shape=shape,
                          dtype=sample_dtype(images)),
                tensor_to_frame(images), tensor_to_frame(labels))

    def _digest(self, shard: int, offset: int, images: torch.Tensor,
                labels: torch.Tensor) -> str:
        key = (shard, offset, len(labels))
        if key not in self._digests:
            if len(self._digests) >= MAX_DIGESTS:
                self._digests.clear()
            self._digests[key] = chunk_digest(images, labels)
        return self._digests[key]
