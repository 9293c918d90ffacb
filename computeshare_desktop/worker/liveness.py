"""Is the hub still there? The driver's policy on silence, pure (the caller passes ``now``).

A silent hub is retried with exponential back-off (Lazy Pirate, see ``BACKOFF``) until
``give_up_s`` has passed since its last answer, or ``first_contact_s`` when it never
answered at all. A heartbeat (Paranoid Pirate) tells a slow transfer from a hub that has
gone: the hub is reported lost after ``lost_after_s`` without a pong, and back when it
answers again; while pongs come, a long request is waited for rather than sent again
(``Patience``: EXTENSIONS more timeouts at most; the channel asks, the policy answers).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

from ..errors import HubUnreachableError
from ..events import Event, HubBack, HubLost
from ..protocol import RejectCode, decode
from ..protocol.messages import Done, Pong, Reject
from ..protocol.wire import Frame
from .options import WorkerOptions

log = logging.getLogger(__name__)

BACKOFF = (0.25, 2.0, 5.0)  # the first retry's wait, its growth factor, the longest wait
BEAT_TIMEOUT_S = 2.0  # a heartbeat waits this long at most (less if requests do)
EXTENSIONS = 3  # how many more timeouts a request waits while the hub is known to be alive


def next_backoff(wait_s: float) -> float:
    """The wait before the retry after one that waited ``wait_s``."""
    return min(wait_s * BACKOFF[1], BACKOFF[2])


@dataclass(frozen=True, slots=True)
class Beat:
    """What a heartbeat's reply says."""

    alive: bool = False  # PONG or DONE: the hub is there
    stopped: int | None = None  # HUB_STOPPED: the version it stopped at
    forgotten: bool = False  # UNKNOWN_WORKER: the hub no longer knows this worker


def read_beat(frames: Sequence[Frame]) -> Beat:
    """The meaning of a reply to a PING; RemoteProtocolError on garbage."""
    reply, _ = decode(frames)
    if isinstance(reply, (Pong, Done)):
        return Beat(alive=True)
    if isinstance(reply, Reject) and reply.code == RejectCode.HUB_STOPPED.value:
        return Beat(stopped=reply.version)
    return Beat(forgotten=isinstance(reply, Reject)
                and reply.code == RejectCode.UNKNOWN_WORKER.value)


class Liveness:
    """When the hub last answered a request and a heartbeat; what that means.

    Shared by the driver's thread and its heartbeat's: each field is written by one of them.
    """

    def __init__(self, options: WorkerOptions) -> None:
        self.opts = options
        self.last_answer: float | None = None  # when any request last got a reply
        self._first_try: float | None = None
        self._last_pong: float | None = None  # when the heartbeat last heard the hub
        self._lost = False  # the heartbeat has not heard the hub for lost_after_s

    def answered(self, now: float) -> None:
        """A request got its reply."""
        self.last_answer = now

    def alive(self, now: float) -> bool:
        """True while the heartbeat has heard the hub recently (a transfer is just slow)."""
        last = self._last_pong
        return last is not None and now - last < 3 * self.opts.heartbeat_s + 2

    def give_up(self, now: float) -> HubUnreachableError | None:
        """The error to end with once the hub never answered, or went silent, too long."""
        if self.last_answer is None:
            self._first_try = self._first_try if self._first_try is not None else now
            if now - self._first_try > min(self.opts.first_contact_s, self.opts.give_up_s):
                return HubUnreachableError("the hub does not answer: check the address and "
                                           "that the hub is running")
        elif now - self.last_answer > self.opts.give_up_s:
            return HubUnreachableError(f"the hub has been silent for {self.opts.give_up_s:.0f} s")
        return None

    def heard(self, now: float) -> list[Event]:
        """A heartbeat was answered; HubBack if the hub had been reported lost."""
        self._last_pong = now
        if not self._lost:
            return []
        self._lost = False
        log.warning("the hub answers again")
        return [HubBack()]

    def missed(self, now: float) -> list[Event]:
        """A heartbeat got no answer; HubLost once the hub has been silent for
        lost_after_s (the worker keeps trying regardless: a link cut or a restarting hub
        comes back), until give_up_s."""
        last = self._last_pong if self._last_pong is not None else self.last_answer
        if last is None or self._lost:
            return []
        silent = now - last
        if silent < min(self.opts.lost_after_s, self.opts.give_up_s / 2):
            return []
        self._lost = True
        log.warning("the hub has not answered for %.0f s: it may have gone; still "
                    "trying for up to %.0f s", silent, self.opts.give_up_s)
        return [HubLost(silent_s=silent, give_up_s=self.opts.give_up_s)]


class Patience:
    """One request's wait: when its timeout runs out while the hub is alive (its heartbeat
    is answered: a transfer is just slow), it is waited for again rather than sent again,
    EXTENSIONS times at most."""

    def __init__(self, watch: Liveness) -> None:
        self.watch = watch
        self.left = EXTENSIONS

    def more(self, now: float) -> bool:
        """Whether to wait another timeout now (each yes uses one extension)."""
        if self.left <= 0 or not self.watch.alive(now):
            return False
        self.left -= 1
        return True
