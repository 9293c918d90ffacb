"""Downloading a worker's shard, chunk by chunk, for the core. Pure."""

from __future__ import annotations

import torch

from ..errors import RejectedError
from ..events import ShardReceived
from ..protocol import RejectCode
from ..protocol.messages import SampleDtype, Shard, ShardData, Welcome
from ..protocol.tensors import frame_to_tensor
from ..protocol.wire import Frame
from .shard_reuse import CachedShard, Fresh

SHARD_CHUNK = 4096  # images per SHARD request; the hub caps it further by bytes
MAX_SHARD_REPLY = 4 * 1024 * 1024  # bytes of one SHARD_DATA chunk at most (hub's cap)
MAX_CHUNK_TENSOR = 16 * MAX_SHARD_REPLY  # bytes of one chunk's tensor as we accept it


class HubDataRefused(RejectedError):
    """This worker refuses what the hub sent (the hub did not refuse us)."""

    prefix = "this worker refuses the hub's session: "


def check_shard(welcome: Welcome) -> None:
    """HubDataRefused(MALFORMED) when the Welcome gives this worker no sample to train on."""
    if welcome.shard_size < 1 or welcome.num_shards < 1:
        raise HubDataRefused(RejectCode.MALFORMED, "its shard for this worker is empty (the "
                             "hub has more workers than training samples)")


class ShardDownload:
    """The chunks of one membership's shard, in order."""

    def __init__(self, welcome: Welcome, cached: CachedShard | None = None) -> None:
        """``cached``: what the worker's shard cache holds of it (None: no cache, the
        shard is kept in memory)."""
        self.welcome = welcome
        self.cached = cached
        self.fresh: Fresh | None = None  # the chunk just sent, for the cache to keep
        self.have = 0  # images received
        self._images: list[torch.Tensor] = []
        self._labels: list[torch.Tensor] = []

    def request(self) -> Shard | None:
        """The next chunk to ask for; None once the shard is complete."""
        w = self.welcome
        if self.have >= w.shard_size:
            return None
        if self.cached is not None:
            return self.cached.request(w.token, self.have, w.shard_size, SHARD_CHUNK)
        return Shard(token=w.token, offset=self.have, count=SHARD_CHUNK)

    def take(self, msg: ShardData, body: list[Frame]) -> ShardReceived:
        """Keep a chunk; RejectedError(MALFORMED) when it is not the one asked for."""
        if msg.same:  # the samples the cache holds are the hub's: nothing came
            self.have += (self.cached or CachedShard()).same(msg, body, self.have)
            return ShardReceived(received=self.have, total=self.welcome.shard_size)
        n = msg.image_shape[0] if msg.image_shape else 0
        if msg.offset != self.have or n == 0:
            raise RejectedError(RejectCode.MALFORMED, "unexpected shard chunk from hub")
        dtype, sample = sample_form(self.welcome)
        if msg.dtype != dtype:
            raise RejectedError(RejectCode.MALFORMED, f"the hub's samples are {msg.dtype}, "
                                f"not the {dtype} its Welcome said")
        if msg.image_shape[1:] != sample:
            raise RejectedError(RejectCode.MALFORMED, f"the hub's samples are "
                                f"{_dims(msg.image_shape[1:])}, not the {_dims(sample)} its "
                                f"Welcome said")
        self._images.append(frame_to_tensor(body[0], dtype, msg.image_shape,
                                            MAX_CHUNK_TENSOR))
        self._labels.append(frame_to_tensor(body[1], "int64", [n], MAX_CHUNK_TENSOR))
        if self.cached is not None:  # the driver's cache keeps it, not this memory
            self.fresh = Fresh(msg.offset, self._images.pop(), self._labels.pop())
        self.have += n
        return ShardReceived(received=self.have, total=self.welcome.shard_size)

    def take_fresh(self) -> Fresh | None:
        """The chunk just sent, once, for the cache to keep (None: none, or no cache)."""
        fresh, self.fresh = self.fresh, None
        return fresh

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole shard: images (N, C, H, W) uint8 (a table's rows: (N, F) float32),
        labels (N,) int64."""
        return torch.cat(self._images), torch.cat(self._labels)


def sample_form(welcome: Welcome) -> tuple[SampleDtype, list[int]]:
    """The dtype and shape of one sample as the Welcome describes it."""
    if welcome.data_kind == "table":
        return "float32", [welcome.features]
    return "uint8", [welcome.channels, welcome.height, welcome.width]


def _dims(shape: list[int]) -> str:
    return "×".join(str(d) for d in shape)
