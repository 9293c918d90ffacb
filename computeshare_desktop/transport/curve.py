"""CURVE sockets, set up in one place: every encrypted socket of the package, its
benchmarks and its test bed comes from ``curve_client`` or ``curve_server``.

A client must know the server's public key before it connects (FACTS.md: a CURVE client
cannot learn it from the handshake); it authenticates with its own long-term key pair
(``Identity``), or with a throwaway one (a benchmark, a flood of strangers). Both get the
options every socket gets (``sockets.configure``: LINGER 0, a cap on incoming messages).
Keys are Z85 text, as ``str`` or ``bytes``.
"""

from __future__ import annotations

import zmq

from .keys import Identity
from .sockets import MAX_MESSAGE_BYTES, configure

__all__ = ["curve_client", "curve_server"]


def curve_client(ctx: zmq.Context, kind: int, server_key: str | bytes,
                 identity: Identity | None = None, *,
                 max_message_bytes: int = MAX_MESSAGE_BYTES) -> zmq.Socket:
    """A socket of ``kind`` (REQ, DEALER, SUB...) that talks only to the server holding
    ``server_key``, as ``identity`` (None: a fresh key pair); not yet connected."""
    identity = identity if identity is not None else Identity.generate()
    sock = configure(ctx.socket(kind), max_message_bytes=max_message_bytes)
    sock.curve_serverkey = _z85(server_key)
    sock.curve_publickey = _z85(identity.public)
    sock.curve_secretkey = _z85(identity.secret)
    return sock


def curve_server(ctx: zmq.Context, kind: int, secret_key: str | bytes, *,
                 zap_domain: str | None = None,
                 max_message_bytes: int = MAX_MESSAGE_BYTES) -> zmq.Socket:
    """A CURVE server socket of ``kind`` (ROUTER, PUB...) with ``secret_key``; not yet
    bound. ``zap_domain``: the ZAP domain whose handler admits or refuses each client key
    (None: any key that knows the server's)."""
    sock = configure(ctx.socket(kind), max_message_bytes=max_message_bytes)
    sock.curve_server = True
    sock.curve_secretkey = _z85(secret_key)
    if zap_domain is not None:
        sock.zap_domain = zap_domain.encode()
    return sock


def _z85(key: str | bytes) -> bytes:
    return key.encode("ascii") if isinstance(key, str) else key
