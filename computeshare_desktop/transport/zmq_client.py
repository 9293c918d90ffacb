"""A worker's request channel: the ZeroMQ guide's Lazy Pirate.

One REQ socket; a request that gets no answer within its timeout closes and reopens the
socket (REQ cannot send twice in a row) and raises ``ChannelTimeout``. The caller decides
whether to retry, so retry policy stays out of the transport.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Callable, Sequence

import zmq

from ..protocol.ports import HubPorts
from ..protocol.wire import Frame
from .curve import curve_client
from .keys import Identity
from .sockets import configure

log = logging.getLogger(__name__)

ABORT_POLL_S = 0.1  # how often a waiting request asks whether to give up


class ChannelTimeout(TimeoutError):
    """No reply within the timeout; the socket has been reset."""


class ReqChannel:
    """Request/reply to one hub address, e.g. ``tcp://192.168.1.20:7341``."""

    def __init__(self, address: str, *, max_message_bytes: int | None = None,
                 server_key: str | None = None, identity: Identity | None = None,
                 ctx: zmq.Context | None = None) -> None:
        """With ``server_key`` and ``identity`` the channel is CURVE-encrypted and the hub
        is authenticated by its public key (a different server cannot answer). ``ctx``:
        a context shared with other channels, which ``close`` leaves to its owner (None:
        one of its own)."""
        self.address = address
        self.max_message_bytes = max_message_bytes
        self.curve = (server_key, identity) if server_key and identity else None
        self._own_ctx = ctx is None
        self.ctx = zmq.Context() if ctx is None else ctx
        self.sock: zmq.Socket | None = None
        self.monitor: zmq.Socket | None = None
        self.bytes_sent = 0
        self.bytes_received = 0

    def _open(self) -> zmq.Socket:
        if self.sock is None:
            kwargs = {} if self.max_message_bytes is None else {
                "max_message_bytes": self.max_message_bytes}
            if self.curve is None:
                self.sock = configure(self.ctx.socket(zmq.REQ), **kwargs)
            else:
                server_key, identity = self.curve
                self.sock = curve_client(self.ctx, zmq.REQ, server_key, identity, **kwargs)
                # The hub's ZAP handler refuses a key it does not allow: learn it at once
                # from the handshake instead of waiting out the request's timeout.
                self.monitor = self.sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_FAILED_AUTH)
            self.sock.connect(self.address)
        return self.sock

    def request(self, frames: Sequence[Frame], timeout_s: float,
                keep_waiting: Callable[[], bool] | None = None,
                abort: Callable[[], bool] | None = None) -> list[bytes]:
        """Send ``frames`` and return the reply's frames.

        Each time ``timeout_s`` runs out, ``keep_waiting()`` is asked whether to wait
        another ``timeout_s`` instead of abandoning the request (the caller's policy: the
        driver's says yes a few times while the hub's heartbeats are answered, see
        ``worker/liveness.Patience``). ``abort()`` is asked every ABORT_POLL_S: when it
        says so, the request is dropped at once.

        Raises:
            ChannelTimeout: nothing came back in time.
            InterruptedError: ``abort()`` said to stop waiting.
            PermissionError: the hub refused this machine's key (CURVE channels).
        """
        sock = self._open()
        sock.send_multipart(list(frames), copy=False)
        self.bytes_sent += sum(len(f) for f in frames)
        while not self._wait(sock, timeout_s, abort):
            if keep_waiting is None or not keep_waiting():
                self.reset()
                raise ChannelTimeout(f"no reply from {self.address} in {timeout_s:.1f} s")
        reply = sock.recv_multipart()
        self.bytes_received += sum(len(f) for f in reply)
        return reply

    def _wait(self, sock: zmq.Socket, timeout_s: float, abort: Callable[[], bool] | None) -> bool:
        """True when a reply is ready within ``timeout_s``; InterruptedError on abort."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            step = left if abort is None else min(left, ABORT_POLL_S)
            if self.monitor is not None:
                step = min(step, ABORT_POLL_S)
            if sock.poll(max(1, int(step * 1000)), zmq.POLLIN):
                return True
            if self.monitor is not None and self.monitor.poll(0):
                self.reset()
                raise PermissionError(f"{self.address} refused this machine's key")
            if abort is not None and abort():
                self.reset()
                raise InterruptedError(f"request to {self.address} abandoned")

    def reset(self) -> None:
        """Drop the socket; the next request opens a new one."""
        if self.sock is not None:
            if self.monitor is not None:
                self.sock.disable_monitor()
                self.monitor.close(0)
                self.monitor = None
            self.sock.close(0)
            self.sock = None

    def close(self) -> None:
        """Close for good (idempotent)."""
        self.reset()
        if self._own_ctx:
            self.ctx.term()


class ZmqConnector:
    """Makes a worker's channels to one hub: its request and pairing ports (HubPorts)."""

    def __init__(self, host: str, port: int, identity: Identity, *,
                 pair_port: int | None = None) -> None:
        self.host = host
        self.port = port
        self.pair_port = pair_port or HubPorts.at(port).pairing
        self.identity = identity

    @property
    def public_key(self) -> str:
        """This worker's long-term public key."""
        return self.identity.public

    def pairing(self) -> ReqChannel:
        """The unencrypted channel for the SPAKE2 handshake (small messages only)."""
        return ReqChannel(f"tcp://{self.host}:{self.pair_port}", max_message_bytes=4096)

    def channel(self, server_key: str) -> ReqChannel:
        """The encrypted, mutually authenticated request channel."""
        return ReqChannel(f"tcp://{self.host}:{self.port}", server_key=server_key,
                          identity=self.identity)


def first_reachable(hosts: Sequence[str], port: int, timeout_s: float = 1.5) -> str:
    """The first of ``hosts`` (best first) that accepts a TCP connection on ``port``; the
    first host when none does (the caller's retries then report it)."""
    for host in hosts:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return host
        except OSError as exc:
            log.info("hub address %s:%d does not answer (%s); trying the next", host, port, exc)
    return hosts[0]

