"""What a worker's shard cache holds, as the core sees it: checked chunks and their digests.
Pure: the driver reads and writes the cache (shard_cache.py); the core only asks the hub
for what is missing and offers the digests of what is held (``Shard.have``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import RejectedError
from ..protocol import RejectCode
from ..protocol.messages import Shard, ShardData
from ..protocol.wire import Frame


@dataclass(frozen=True, slots=True)
class Held:
    """Samples [offset, offset + count) of the shard, held with this digest (checked)."""

    offset: int
    count: int
    digest: str


@dataclass(frozen=True, slots=True)
class Fresh:
    """A chunk the hub sent, for the cache to keep."""

    offset: int
    images: torch.Tensor
    labels: torch.Tensor


@dataclass(frozen=True, slots=True)
class CachedShard:
    """The chunks of this worker's shard that its cache holds, each checked against its
    bytes (an empty cache holds none)."""

    chunks: tuple[Held, ...] = ()

    def at(self, offset: int) -> Held | None:
        """The held chunk that starts at ``offset``."""
        return next((h for h in self.chunks if h.offset == offset), None)

    def request(self, token: str, offset: int, size: int, most: int) -> Shard:
        """The request for the samples from ``offset`` on: a held chunk with its digest, or
        the missing ones up to the next held chunk (so held ranges stay as they were cut)."""
        held = self.at(offset)
        if held is not None:
            return Shard(token=token, offset=offset, count=held.count, have=held.digest)
        following = min((h.offset for h in self.chunks if h.offset > offset), default=size)
        return Shard(token=token, offset=offset, count=max(1, min(most, following - offset)))

    def same(self, msg: ShardData, body: list[Frame], offset: int) -> int:
        """How many samples a ``same`` reply confirms (the held chunk at ``offset``, whose
        samples' form the cache checked against the Welcome).

        Raises:
            RejectedError(MALFORMED): a range this worker did not offer, or data frames.
        """
        held = self.at(offset)
        if (held is None or msg.offset != offset or any(len(f) for f in body)
                or msg.image_shape[:1] != [held.count]):
            raise RejectedError(RejectCode.MALFORMED,
                                "the hub said 'same' for a range this worker did not offer")
        return held.count
