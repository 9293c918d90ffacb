"""Listening to a hub's event stream (PUB, CURVE): a paired key is needed to connect.

The SUB socket lives on a thread of its own and hands each decoded event to a callback on
that thread. Events are small JSON objects (round, eval, worker_joined...); a frame that
is not one is dropped. Events are best-effort: a slow subscriber may miss some.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Callable

import zmq

from ..events import Event, from_wire
from .curve import curve_client
from .keys import Identity
from .zmq_hub import EVENT_TOPIC

log = logging.getLogger(__name__)

MAX_EVENT_BYTES = 1024 * 1024


class EventSubscriber:
    """Calls ``on_event`` with every (typed) event the hub publishes, until ``close()``."""

    def __init__(self, host: str, pub_port: int, identity: Identity, hub_key: str,
                 on_event: Callable[[Event], None]) -> None:
        self.address = f"tcp://{host}:{pub_port}"
        self.identity = identity
        self.hub_key = hub_key
        self.on_event = on_event
        self._stop = threading.Event()
        self._thread = threading.Thread(  # named after the thread that made it (log scopes)
            target=self._run, name=f"{threading.current_thread().name}/feed", daemon=True)

    def start(self) -> "EventSubscriber":
        """Connect and start listening."""
        self._thread.start()
        return self

    def _run(self) -> None:
        ctx = zmq.Context()
        sock = curve_client(ctx, zmq.SUB, self.hub_key, self.identity,
                            max_message_bytes=MAX_EVENT_BYTES)
        try:
            sock.setsockopt(zmq.SUBSCRIBE, EVENT_TOPIC)
            sock.connect(self.address)
            while not self._stop.is_set():
                if sock.poll(100):
                    self._deliver(sock.recv())
        finally:
            sock.close(0)
            ctx.term()

    def _deliver(self, frame: bytes) -> None:
        try:
            event = json.loads(frame[len(EVENT_TOPIC) + 1:])
        except (ValueError, RecursionError):
            log.debug("dropped a malformed event frame")
            return
        try:
            typed = from_wire(event)
        except (ValueError, TypeError) as exc:
            log.debug("dropped a malformed event: %s", exc)
            return
        if typed is not None:  # None: a kind a newer hub knows and we do not
            self.on_event(typed)

    def close(self) -> None:
        """Stop listening (idempotent)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
