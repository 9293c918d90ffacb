"""Socket options every ComputeShare socket gets."""

from __future__ import annotations

import errno

import zmq

from ..defaults import DEFAULT_PORT
from ..errors import PortInUseError

__all__ = ["DEFAULT_PORT", "MAX_MESSAGE_BYTES", "bind", "configure"]
# The largest message the hub accepts: ResNet-18 sized payloads (45 MB raw) plus headroom.
# Anything bigger drops that connection inside libzmq, before Python sees a byte.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


def configure(sock: zmq.Socket, *, max_message_bytes: int = MAX_MESSAGE_BYTES) -> zmq.Socket:
    """LINGER 0 (so shutdown never hangs) and a cap on incoming messages."""
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, max_message_bytes)
    return sock


def bind(sock: zmq.Socket, host: str, port: int) -> int:
    """Bind to ``host:port`` (port 0: any free port) and return the port.

    Raises:
        PortInUseError: with a one-line message naming the way out.
    """
    try:
        if port == 0:
            return sock.bind_to_random_port(f"tcp://{host}")
        sock.bind(f"tcp://{host}:{port}")
        return port
    except zmq.ZMQError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(f"port {port} on {host} is already in use: stop the other "
                                 f"program or choose another with --port") from None
        raise PortInUseError(f"cannot listen on {host}:{port}: {exc}") from None
