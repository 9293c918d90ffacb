"""One come-back policy for the app and the CLI (service/comeback.py): a worker may come back
only when its host stopped the session, and its session is back only once it has gone and
is there again, accepting workers."""

from __future__ import annotations

from helpers.host import joining
from computeshare_desktop.service import JoinTarget
from computeshare_desktop.service.comeback import Return, stopped_by_host
from computeshare_desktop.service.join import JoinService


def worker(code: str | None) -> JoinService:
    target = JoinTarget("127.0.0.1", 9, "127.0.0.1:9")
    service = JoinService(joining(target, pin="", name="w"))
    service.error_code = code
    return service


def test_a_session_still_there_after_the_stop_is_not_back_until_it_has_gone():
    back = Return()
    assert not back.seen(True)  # the session that is ending still answers
    assert not back.seen(False)  # gone
    assert not back.seen(True, accepting=False)  # resumed, not yet taking workers
    assert back.seen(True)


def test_only_a_worker_its_host_stopped_may_come_back():
    assert stopped_by_host(worker("HUB_STOPPED"))
    assert not stopped_by_host(worker("UNREACHABLE"))
    assert not stopped_by_host(worker(None))
    assert not stopped_by_host(object())  # a host's window, say
