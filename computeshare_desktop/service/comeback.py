"""Workers come back: after the hub's host stopped the session, a worker waits for the hub to
serve again (its host resumed the session) and joins it again, without the PIN.

The hub that stopped still answers for a moment (it tells its workers, then closes): the
wait begins once its port is closed, so a worker never rejoins the session that is ending.
The new worker presents its key only to the hub key it remembers (the CURVE handshake proves
the hub holds it), and that hub lets it in without pairing: a resumed session keeps the
machines that had joined it, and later sessions its paired machines.

One policy for the app and the CLI: ``stopped_by_host`` says when a worker may come back,
``Return`` when its session is back (gone first, then there again and accepting workers).
``join --come-back`` watches the hub's port (``come_back``); the app watches the LAN for the
session's advert (gui/comeback.py, which keeps only the Qt part).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
import threading
import time
from typing import Callable

from ..errors import ComputeShareError, HubUnreachableError
from ..reach import probe_hub
from .join import JoinPlan, JoinService
from .threads import Tagged

log = logging.getLogger(__name__)

GONE_POLL_S = 0.2  # how often the stopping hub's port is tried until it closes
CLOSE_WAIT_S = 15.0  # at most this long: a hub resumed at once reopens the port meanwhile


def stopped_by_host(service: object) -> bool:
    """True once ``service`` (a worker) has ended because its host stopped the session:
    it may come back when the session is resumed."""
    return isinstance(service, JoinService) and not service.running and \
        service.error_code == "HUB_STOPPED"


@dataclass
class Return:
    """Whether a stopped worker's session is back: it must first have gone (its port
    closed, its advert off the LAN), so that a worker never rejoins the session that is
    ending; then it is back once it is there again and accepting workers."""

    gone: bool = False  # the session has been seen gone since its host stopped it

    def seen(self, present: bool, accepting: bool = True) -> bool:
        """Take one look at the session (there or not, accepting workers or not); True
        when it is back."""
        if not present:
            self.gone = True
            return False
        return self.gone and accepting


def wait_until_closed(host: str, port: int, deadline: float,
                      stop: threading.Event | None = None) -> bool:
    """True once nothing listens on ``host:port`` any more (the session has gone, see
    ``Return``), False at ``deadline`` (or ``stop``)."""
    stop = stop or threading.Event()
    back = Return()
    while time.monotonic() < deadline and not stop.is_set():
        back.seen(_listening(host, port))
        if back.gone:
            return True
        stop.wait(GONE_POLL_S)
    return False


def _listening(host: str, port: int) -> bool:
    try:
        probe_hub(host, port, timeout_s=1.0)
    except HubUnreachableError:
        return False
    return True


def come_back(plan: JoinPlan, wait_s: float,
              on_event: Callable[[Tagged], None] | None = None,
              stop: threading.Event | None = None,
              say: Callable[[str], None] = log.info) -> JoinService | None:
    """After the hub stopped the session: a new (unstarted) worker for the same hub, made
    once the old session has closed its port (or after CLOSE_WAIT_S: its host may have
    resumed it at once), that waits the rest of ``wait_s`` for the hub to listen again.
    None when no time is left (or ``stop``). Should it still meet the session that stopped,
    it ends with HUB_STOPPED again: the caller asks again, with the time left."""
    deadline = time.monotonic() + wait_s
    closed = wait_until_closed(plan.target.host, plan.target.port,
                               min(deadline, time.monotonic() + CLOSE_WAIT_S), stop)
    left = deadline - time.monotonic()
    if left <= 0 or (stop is not None and stop.is_set()):
        return None
    if closed:
        say(f"the session has closed; joining it again once it is resumed (up to "
            f"{left:.0f} s)")
    return JoinService(dataclasses.replace(
        plan, options=dataclasses.replace(plan.options, wait_s=left)), on_event=on_event)


def waiting_for(seconds: float) -> str:
    """``600`` as "10 min", ``90`` as "90 s"."""
    return f"{seconds / 60:.0f} min" if seconds >= 120 and seconds % 60 == 0 \
        else f"{seconds:.0f} s"


def run_coming_back(first: JoinService, run: Callable[[JoinService], None], wait_s: float,
                    on_event: Callable[[Tagged], None] | None = None,
                    say: Callable[[str], None] = log.info) -> JoinService:
    """``run(first)`` (start it and wait for its end; it raises the worker's error); each time
    the host stops the session, wait up to ``wait_s`` (in all, from the first stop) for it to
    be resumed and run a worker that joins it again (``join --come-back``). The last worker;
    the error of the last stop when the session did not come back in time, or when Ctrl-C
    ends the wait (KeyboardInterrupt, or a worker stopped before it joined)."""
    service, deadline, stopped = first, None, None
    while True:
        try:
            run(service)
            if stopped is None or service.result is not None or service.error is not None:
                return service
            say("left the wait: the session was not resumed")  # Ctrl-C while it waited
            raise stopped
        except KeyboardInterrupt:
            if stopped is None:
                raise
            say("left the wait: the session was not resumed")
            raise stopped from None
        except ComputeShareError:
            if stopped is not None and not stopped_by_host(service):
                if service.error_code == "UNREACHABLE":  # the wait ran out
                    say(f"the session was not resumed within {waiting_for(wait_s)}")
                    raise stopped from None
                raise
            if not stopped_by_host(service) or wait_s <= 0:
                raise
            assert service.error is not None
            stopped = service.error
            if deadline is None:
                deadline = time.monotonic() + wait_s
                at = "" if service.stopped_at is None else f" at round {service.stopped_at}"
                say(f"the host stopped the session{at}; waiting up to {waiting_for(wait_s)} "
                    f"for it to be resumed (Ctrl-C to leave; --come-back 0 to exit at once)")
        try:
            again = come_back(service.plan, deadline - time.monotonic(), on_event, say=say)
        except KeyboardInterrupt:
            say("left the wait: the session was not resumed")
            raise stopped from None
        if again is None:
            say(f"the session was not resumed within {waiting_for(wait_s)}")
            raise stopped
        service = again
