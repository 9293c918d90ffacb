"""Downloading a worker's shard, chunk by chunk, for the core. Pure."""

from __future__ import annotations

import torch

from ..errors import RejectedError
from ..events import ShardReceived
from ..protocol import RejectCode
from ..protocol.messages import Shard, ShardData, Welcome
from ..protocol.tensors import frame_to_tensor
from ..protocol.wire import Frame

SHARD_CHUNK = 4096  # images per SHARD request; the hub caps it further by bytes
MAX_SHARD_REPLY = 4 * 1024 * 1024  # bytes of one SHARD_DATA chunk at most (hub's cap)
MAX_CHUNK_TENSOR = 16 * MAX_SHARD_REPLY  # bytes of one chunk's tensor as we accept it


class ShardDownload:
    """The chunks of one membership's shard, in order."""

    def __init__(self, welcome: Welcome) -> None:
        self.welcome = welcome
        self.have = 0  # images received
        self._images: list[torch.Tensor] = []
        self._labels: list[torch.Tensor] = []

    def request(self) -> Shard | None:
        """The next chunk to ask for; None once the shard is complete."""
        if self.have >= self.welcome.shard_size:
            return None
        return Shard(token=self.welcome.token, offset=self.have, count=SHARD_CHUNK)

    def take(self, msg: ShardData, body: list[Frame]) -> ShardReceived:
        """Keep a chunk; RejectedError(MALFORMED) when it is not the one asked for."""
        n = msg.image_shape[0] if msg.image_shape else 0
        if msg.offset != self.have or n == 0 or len(msg.image_shape) != 4:
            raise RejectedError(RejectCode.MALFORMED, "unexpected shard chunk from hub")
        w = self.welcome
        if msg.image_shape[1:] != [w.channels, w.height, w.width]:
            raise RejectedError(RejectCode.MALFORMED, f"the hub's images are "
                                f"{msg.image_shape[1:]}, not the {w.channels}×{w.height}×"
                                f"{w.width} its Welcome said")
        self._images.append(frame_to_tensor(body[0], "uint8", msg.image_shape,
                                            MAX_CHUNK_TENSOR))
        self._labels.append(frame_to_tensor(body[1], "int64", [n], MAX_CHUNK_TENSOR))
        self.have += n
        return ShardReceived(received=self.have, total=self.welcome.shard_size)

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole shard: images (N, C, H, W) uint8, labels (N,) int64."""
        return torch.cat(self._images), torch.cat(self._labels)
