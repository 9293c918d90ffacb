"""The hub's sockets. Thin by design: all decisions live in ``HubSession``.

* requests: ROUTER, CURVE server; the ZAP handler admits only allowlisted worker keys,
  and the key of every message (its ``User-Id``) goes to the core, which checks it again.
* events: PUB, CURVE server with the same allowlist, so only paired peers can listen.
* pairing: a plain ROUTER with a tiny message cap; SPAKE2 protects what crosses it.

Ports are consecutive (``protocol.ports.HubPorts``): requests P, events P+1, pairing P+2.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from typing import Any

import zmq
from zmq.auth.thread import ThreadAuthenticator

from ..errors import PortInUseError
from ..events import Event, HubStopped
from ..hub.endpoint import HubEndpoint, HubResult
from ..protocol.ports import HubPorts
from .curve import curve_server
from .keys import Identity
from .sockets import DEFAULT_PORT, bind, configure

log = logging.getLogger(__name__)

POLL_MS = 20
GOODBYE_S = 1.5  # longer than a worker's heartbeat period, so each one hears it
EVENT_TOPIC = b"cs.event"
ZAP_DOMAIN = "computeshare"
REQUEST_DOMAIN = "computeshare.requests"  # also admits a network check's key (hub/probe.py)
MAX_PAIRING_MESSAGE = 4096
PAIRING_RCVHWM = 8  # messages queued per pairing peer (a worker sends one at a time)
REQUEST_RCVHWM = 16  # per worker connection: a request, plus retries of lost ones
SUBSCRIBER_RCVHWM = 4  # per event listener: it only ever sends its subscription
MAX_SUBSCRIPTION_BYTES = 4096  # a subscription names a topic (CURVE handshakes pass too)


class _AllowlistProvider:
    """ZAP credentials callback backed by the session's allowlist."""

    def __init__(self, session: HubEndpoint) -> None:
        self.session = session

    def callback(self, domain: str, key: bytes) -> bool:
        return self.session.allows(key.decode("ascii", "replace"))


class _RequestProvider(_AllowlistProvider):
    """The request socket's: paired keys, keys granted a network check for a while, and
    kicked keys (every request of theirs is answered BANNED, never served)."""

    def callback(self, domain: str, key: bytes) -> bool:
        text = key.decode("ascii", "replace")
        return self.session.allows(text) or self.session.probing(text) or \
            self.session.removed(text)  # told BANNED, each time


class HubServer:
    """Serves one hub session until it is done (or ``stop`` is set)."""

    def __init__(self, session: HubEndpoint, identity: Identity, *, host: str = "0.0.0.0",
                 port: int = DEFAULT_PORT) -> None:
        self.session = session
        self.identity = identity
        self.host = host
        self.ctx = zmq.Context()
        self.auth = ThreadAuthenticator(self.ctx, log=logging.getLogger(__name__ + ".zap"))
        self.auth.start()
        self.auth.configure_curve_callback(domain=ZAP_DOMAIN,
                                           credentials_provider=_AllowlistProvider(session))
        self.auth.configure_curve_callback(domain=REQUEST_DOMAIN,
                                           credentials_provider=_RequestProvider(session))
        self._kicks: queue.Queue[tuple[int, bool]] = queue.Queue()
        self._allowed: queue.Queue[str] = queue.Queue()
        self._pins: queue.Queue[str] = queue.Queue()
        self._delimited: dict[bytes, bool] = {}
        try:
            self.ports = self._bind_all(port)
        except BaseException:
            self.close()
            raise
        session.subscribe(self._publish)

    # ----------------------------------------------------------------- sockets
    def _curve_socket(self, kind: int, domain: str = ZAP_DOMAIN) -> zmq.Socket:
        return curve_server(self.ctx, kind, self.identity.secret, zap_domain=domain)

    def _pub_socket(self) -> zmq.Socket:
        # A listener only sends subscriptions: it can make the hub hold a few small ones.
        sock = self._curve_socket(zmq.PUB)
        sock.setsockopt(zmq.RCVHWM, SUBSCRIBER_RCVHWM)
        sock.setsockopt(zmq.MAXMSGSIZE, MAX_SUBSCRIPTION_BYTES)
        return sock

    def _bind_all(self, port: int) -> HubPorts:
        for _ in range(1 if port else 50):
            self.router = self._curve_socket(zmq.ROUTER, REQUEST_DOMAIN)
            self.pub = self._pub_socket()
            self.pairing = configure(self.ctx.socket(zmq.ROUTER),
                                     max_message_bytes=MAX_PAIRING_MESSAGE)
            # Anyone on the LAN can reach these (and the PUB): a low per-connection queue (libzmq's
            # high-water marks count per peer) bounds what one peer can make the hub hold.
            self.pairing.setsockopt(zmq.RCVHWM, PAIRING_RCVHWM)
            self.router.setsockopt(zmq.RCVHWM, REQUEST_RCVHWM)
            try:
                ports = HubPorts.at(bind(self.router, self.host, port))
                bind(self.pub, self.host, ports.events)
                bind(self.pairing, self.host, ports.pairing)
                return ports
            except PortInUseError:
                for sock in (self.router, self.pub, self.pairing):
                    sock.close(0)
                if port:
                    raise
        raise PortInUseError("no three consecutive free ports found")

    @property
    def port(self) -> int:
        """The request port P."""
        return self.ports.request

    @property
    def pub_port(self) -> int:
        return self.ports.events

    @property
    def pair_port(self) -> int:
        return self.ports.pairing

    # ----------------------------------------------------------------- loop
    def serve(self, stop: threading.Event | None = None, linger_s: float = 5.0) -> HubResult | None:
        """Run until training is done and workers were told, or ``stop`` is set."""
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.pairing, zmq.POLLIN)
        stop = stop or threading.Event()
        while not stop.is_set() and not self.session.done:
            self._step(poller)
        if not self.session.done:
            self._goodbye(poller)
            return None
        result = self.session.finish()
        until = time.monotonic() + linger_s
        while time.monotonic() < until and not stop.is_set() and not self.session.all_told():
            self._step(poller)
        return result

    def _goodbye(self, poller: zmq.Poller) -> None:
        """Stopping early: tell every worker (parked long-polls now, the others at their
        next request or heartbeat, within GOODBYE_S) and publish it for listeners."""
        for reply in self.session.tell_stopping():
            self._send(reply.peer, reply.frames)
        self._publish(HubStopped(self.session.version))
        until = time.monotonic() + GOODBYE_S
        while time.monotonic() < until and not self.session.all_told():
            self._step(poller)

    def kick(self, worker_id: int, block: bool = False) -> None:
        """Ask the loop to remove a worker and refuse its key; with ``block``, in the
        hub's later sessions too (thread-safe)."""
        self._kicks.put((worker_id, block))

    def allow_again(self, key: str) -> None:
        """Ask the loop to let a removed or blocked key pair again (thread-safe)."""
        self._allowed.put(key)

    def set_pin(self, pin: str) -> None:
        """Ask the loop to rotate the session PIN (thread-safe)."""
        self._pins.put(pin)

    def _step(self, poller: zmq.Poller) -> None:
        events = dict(poller.poll(POLL_MS))
        if self.pairing in events:
            self._drain(self.pairing, self._on_pairing)
        if self.router in events:
            self._drain(self.router, self._on_request)
        for reply in self.session.tick(time.monotonic()):
            self._send(reply.peer, reply.frames)
        while not self._kicks.empty():
            if self.session.kick(*self._kicks.get_nowait()):
                self._restart_pub()
        while not self._allowed.empty():
            self.session.allow_again(self._allowed.get_nowait())
        while not self._pins.empty():
            self.session.set_pin(self._pins.get_nowait())

    def _drain(self, sock: zmq.Socket, handler: Any, limit: int = 256) -> None:
        for _ in range(limit):  # bounded, so one busy socket cannot starve the other
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            handler(frames)

    def _on_request(self, frames: list[zmq.Frame]) -> None:
        user_id = frames[-1].get("User-Id") if len(frames) > 1 else None
        peer_key = user_id if isinstance(user_id, str) else None
        peer, message, delimited = _split([f.bytes for f in frames])
        self._delimited[peer] = delimited
        if len(self._delimited) > 4096:
            self._delimited.clear()
        for reply in self.session.handle(peer, message, time.monotonic(), peer_key):
            self._send(reply.peer, reply.frames)

    def _on_pairing(self, frames: list[zmq.Frame]) -> None:
        source = _peer_address(frames[-1])
        peer, message, delimited = _split([f.bytes for f in frames])
        for reply in self.session.handle_pairing(peer, message, time.monotonic(), source):
            envelope = [peer, b""] if delimited else [peer]
            try:
                self.pairing.send_multipart([*envelope, *reply.frames], zmq.NOBLOCK)
            except zmq.ZMQError:
                pass

    def _send(self, peer: bytes, frames: list[Any]) -> None:
        envelope = [peer, b""] if self._delimited.get(peer, True) else [peer]
        try:
            self.router.send_multipart([*envelope, *frames], zmq.NOBLOCK, copy=False)
        except zmq.ZMQError as exc:  # peer gone or its queue full: it will retry
            log.debug("reply to %s dropped: %s", peer.hex()[:8], exc)

    def _restart_pub(self) -> None:
        """Drop every subscriber; the allowed ones reconnect through ZAP, a kicked one cannot."""
        self.pub.close(0)
        self.pub = self._pub_socket()
        for _ in range(50):  # the old socket's port is released asynchronously
            try:
                bind(self.pub, self.host, self.pub_port)
                return
            except PortInUseError:
                time.sleep(0.01)
        log.error("could not rebind the event port %d after a kick", self.pub_port)

    def _publish(self, event: Event) -> None:
        try:
            self.pub.send(EVENT_TOPIC + b" " + json.dumps(event.to_wire()).encode(),
                          zmq.NOBLOCK)
        except zmq.ZMQError:
            pass

    def close(self) -> None:
        """Close the sockets, the authenticator and the context (idempotent)."""
        for name in ("router", "pub", "pairing"):
            sock = getattr(self, name, None)
            if sock is not None:
                sock.close(0)
        self.auth.stop()
        self.ctx.term()


def _peer_address(frame: zmq.Frame) -> str | None:
    """The sender's IP address, as libzmq saw the TCP connection."""
    try:
        address = frame.get("Peer-Address")
    except (zmq.ZMQError, AttributeError):  # an old libzmq
        return None
    return address if isinstance(address, str) else None


def _split(frames: list[bytes]) -> tuple[bytes, list[bytes], bool]:
    """(peer identity, message frames, whether a REQ-style empty delimiter was present)."""
    delimited = len(frames) >= 2 and frames[1] == b""
    return frames[0], frames[2:] if delimited else frames[1:], delimited
