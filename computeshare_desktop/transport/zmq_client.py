"""A worker's request channel: the ZeroMQ guide's Lazy Pirate.

One REQ socket; a request that gets no answer within its timeout closes and reopens the
socket (REQ cannot send twice in a row) and raises ``ChannelTimeout``. The caller decides
whether to retry, so retry policy stays out of the transport.
"""

from __future__ import annotations

import logging
from typing import Sequence

import zmq

from .sockets import configure

log = logging.getLogger(__name__)


class ChannelTimeout(TimeoutError):
    """No reply within the timeout; the socket has been reset."""


class ReqChannel:
    """Request/reply to one hub address, e.g. ``tcp://192.168.1.20:7341``."""

    def __init__(self, address: str, *, max_message_bytes: int | None = None) -> None:
        self.address = address
        self.max_message_bytes = max_message_bytes
        self.ctx = zmq.Context()
        self.sock: zmq.Socket | None = None
        self.bytes_sent = 0
        self.bytes_received = 0

    def _open(self) -> zmq.Socket:
        if self.sock is None:
            kwargs = {} if self.max_message_bytes is None else {
                "max_message_bytes": self.max_message_bytes}
            self.sock = configure(self.ctx.socket(zmq.REQ), **kwargs)
            self.sock.connect(self.address)
        return self.sock

    def request(self, frames: Sequence[bytes], timeout_s: float) -> list[bytes]:
        """Send ``frames`` and return the reply's frames.

        Raises:
            ChannelTimeout: nothing came back in ``timeout_s``.
        """
        sock = self._open()
        sock.send_multipart(list(frames), copy=False)
        self.bytes_sent += sum(len(f) for f in frames)
        if sock.poll(int(timeout_s * 1000), zmq.POLLIN):
            reply = sock.recv_multipart()
            self.bytes_received += sum(len(f) for f in reply)
            return reply
        self.reset()
        raise ChannelTimeout(f"no reply from {self.address} in {timeout_s:.1f} s")

    def reset(self) -> None:
        """Drop the socket; the next request opens a new one."""
        if self.sock is not None:
            self.sock.close(0)
            self.sock = None

    def close(self) -> None:
        """Close for good (idempotent)."""
        self.reset()
        self.ctx.term()
