"""Is the hub still there? Its last answers, the heartbeat thread and the give-up rule.

A silent hub is retried with exponential back-off (Lazy Pirate) until ``give_up_s`` has
passed since its last answer. A heartbeat on its own thread (Paranoid Pirate) tells a slow
transfer from a hub that has gone: it reports the hub lost after ``lost_after_s`` of
silence, and back when it answers again.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from ..errors import HubUnreachableError, RejectedError, RemoteProtocolError
from ..events import Event, HubBack, HubLost, HubSilent
from ..protocol import RejectCode, decode, encode
from ..protocol.messages import Done, Ping, Pong, Reject
from ..protocol.wire import Frame
from .options import Channel, Connector, WorkerOptions

log = logging.getLogger(__name__)

EventSink = Callable[[Event], None]


class HubWatch:
    """When the hub last answered, and the heartbeat that keeps asking; a session owns one."""

    def __init__(self, connector: Connector, options: WorkerOptions, stop: threading.Event,
                 emit: EventSink, on_stopped: Callable[[int], None]) -> None:
        """``stop`` is the session's; ``on_stopped(version)`` runs when the hub says it stopped."""
        self.connector = connector
        self.opts = options
        self.stop = stop
        self._emit = emit
        self._on_stopped = on_stopped
        self.last_answer: float | None = None  # when any request last got a reply
        self._first_try: float | None = None
        self._beat: threading.Thread | None = None
        self._last_pong: float | None = None  # when the heartbeat last heard the hub
        self._lost = False  # the heartbeat has not heard the hub for lost_after_s

    def request(self, channel: Channel, frames: list[Frame], timeout_s: float) -> list[bytes]:
        """The reply, retried with back-off while the hub is silent; raises on give-up."""
        backoff = 0.25
        while True:
            try:
                reply = channel.request(frames, timeout_s, keep_waiting=self.alive,
                                        abort=self.stop.is_set)
                self.last_answer = time.monotonic()
                return reply
            except InterruptedError:
                raise HubUnreachableError("stopped while waiting for the hub") from None
            except PermissionError:
                raise RejectedError(RejectCode.NOT_PAIRED,
                                    "the hub does not allow this machine's key") from None
            except TimeoutError:
                self.check_give_up()
                log.warning("no answer from the hub; retrying in %.1f s", backoff)
                self._emit(HubSilent(backoff))
                if self.stop.wait(backoff):
                    raise HubUnreachableError("stopped while waiting for the hub") from None
                backoff = min(backoff * 2, 5.0)

    def alive(self) -> bool:
        """True while the heartbeat has heard the hub recently (a transfer is just slow)."""
        last = self._last_pong
        return last is not None and time.monotonic() - last < 3 * self.opts.heartbeat_s + 2

    def check_give_up(self) -> None:
        """Raise HubUnreachableError once the hub never answered, or went silent, too long."""
        now = time.monotonic()
        if self.last_answer is None:
            self._first_try = self._first_try or now
            if now - self._first_try > min(self.opts.first_contact_s, self.opts.give_up_s):
                raise HubUnreachableError("the hub does not answer: check the address and "
                                          "that the hub is running")
        elif now - self.last_answer > self.opts.give_up_s:
            raise HubUnreachableError(f"the hub has been silent for {self.opts.give_up_s:.0f} s")

    def start(self, hub_key: str | None, token: Callable[[], str | None]) -> None:
        """Start the heartbeat thread unless it runs; ``token()`` is the session's, if any."""
        if self._beat is None or not self._beat.is_alive():
            self._beat = threading.Thread(  # named after the session's thread (log scopes)
                target=self._heartbeat, args=(hub_key, token),
                name=f"{threading.current_thread().name}/heartbeat", daemon=True)
            self._beat.start()

    def join(self, timeout_s: float) -> None:
        """Wait for the heartbeat thread to end (after ``stop`` is set)."""
        if self._beat is not None:
            self._beat.join(timeout=timeout_s)

    def _heartbeat(self, hub_key: str | None, token: Callable[[], str | None]) -> None:
        assert hub_key is not None
        channel = self.connector.channel(hub_key)
        try:
            while not self.stop.wait(self.opts.heartbeat_s):
                current = token()
                if current is None:
                    continue
                try:
                    reply, _ = decode(channel.request(
                        encode(Ping(current)), timeout_s=min(2.0, self.opts.request_timeout_s),
                        abort=self.stop.is_set))
                except (TimeoutError, InterruptedError, PermissionError, RemoteProtocolError):
                    self._check_lost()
                    continue
                if isinstance(reply, Reject) and reply.code == RejectCode.HUB_STOPPED.value:
                    self._on_stopped(reply.version)
                elif isinstance(reply, (Pong, Done)):
                    self._heard()
        finally:
            channel.close()

    def _heard(self) -> None:
        self._last_pong = time.monotonic()
        if self._lost:
            self._lost = False
            log.warning("the hub answers again")
            self._emit(HubBack())

    def _check_lost(self) -> None:
        """Say so once the hub has been silent for lost_after_s; keep trying regardless
        (a link cut or a restarting hub comes back), until give_up_s."""
        last = self._last_pong if self._last_pong is not None else self.last_answer
        if last is None or self._lost:
            return
        silent = time.monotonic() - last
        if silent >= min(self.opts.lost_after_s, self.opts.give_up_s / 2):
            self._lost = True
            log.warning("the hub has not answered for %.0f s: it may have gone; still "
                        "trying for up to %.0f s", silent, self.opts.give_up_s)
            self._emit(HubLost(silent, self.opts.give_up_s))
