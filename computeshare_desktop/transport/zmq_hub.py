"""The hub's sockets: a ROUTER for requests and a PUB for events. Thin by design.

All decisions live in ``HubSession``; this loop only moves frames and time. REQ clients
put an empty delimiter frame after their identity; DEALER clients may not. Both work.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import zmq

from ..hub import HubResult, HubSession
from .sockets import DEFAULT_PORT, bind, configure

log = logging.getLogger(__name__)

POLL_MS = 20
EVENT_TOPIC = b"cs.event"


class HubServer:
    """Serves one HubSession until it is done (or ``stop`` is set)."""

    def __init__(self, session: HubSession, *, host: str = "0.0.0.0", port: int = DEFAULT_PORT,
                 pub_port: int | None = None) -> None:
        self.session = session
        self.ctx = zmq.Context()
        self.router = configure(self.ctx.socket(zmq.ROUTER))
        self.pub = configure(self.ctx.socket(zmq.PUB))
        try:
            self.port = bind(self.router, host, port)
            self.pub_port = bind(self.pub, host, (self.port + 1 if port else 0)
                                 if pub_port is None else pub_port)
        except BaseException:
            self.close()
            raise
        self._delimited: dict[bytes, bool] = {}
        session.sinks.append(self._publish)

    def serve(self, stop: threading.Event | None = None, linger_s: float = 5.0) -> HubResult | None:
        """Run until training is done and workers were told, or ``stop`` is set."""
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        stop = stop or threading.Event()
        while not stop.is_set() and not self.session.done:
            self._step(poller)
        if not self.session.done:
            return None
        result = self.session.finish()
        until = time.monotonic() + linger_s
        while time.monotonic() < until and not stop.is_set() and not self.session.core.all_told():
            self._step(poller)
        return result

    def _step(self, poller: zmq.Poller) -> None:
        events = dict(poller.poll(POLL_MS))
        while self.router in events:
            try:
                frames = self.router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            self._on_request(frames)
        for reply in self.session.tick(time.monotonic()):
            self._send(reply.peer, reply.frames)

    def _on_request(self, frames: list[bytes]) -> None:
        peer = frames[0]
        delimited = len(frames) >= 2 and frames[1] == b""
        if len(self._delimited) > 4096:
            self._delimited.clear()
        self._delimited[peer] = delimited
        message = frames[2:] if delimited else frames[1:]
        for reply in self.session.handle(peer, message, time.monotonic()):
            self._send(reply.peer, reply.frames)

    def _send(self, peer: bytes, frames: list[Any]) -> None:
        envelope = [peer, b""] if self._delimited.get(peer, True) else [peer]
        try:
            self.router.send_multipart([*envelope, *frames], zmq.NOBLOCK, copy=False)
        except zmq.ZMQError as exc:  # peer gone or its queue full: it will retry
            log.debug("reply to %s dropped: %s", peer.hex()[:8], exc)

    def _publish(self, event: dict[str, Any]) -> None:
        try:
            self.pub.send(EVENT_TOPIC + b" " + json.dumps(event).encode(), zmq.NOBLOCK)
        except zmq.ZMQError:
            pass

    def close(self) -> None:
        """Close the sockets and the context (idempotent)."""
        self.router.close(0)
        self.pub.close(0)
        self.ctx.term()
