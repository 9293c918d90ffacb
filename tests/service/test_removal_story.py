"""A removed machine's whole story with real services on loopback: a kick refuses it for
this session (with the PIN too), "Allow again" lets it back with the PIN, "Block this
machine" refuses it in the hub's next session too, and the worker knows each time which it
is (its Join dialog and `join` say so)."""

from __future__ import annotations

import pytest
from helpers.host import hosting
from helpers.net import PIN, free_ports, wait_for

from computeshare_desktop.events import Joined
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.service import HostService
from computeshare_desktop.service.join import removed_by
from computeshare_desktop.service.options import JoinTarget
from helpers.host import saw, worker


def host(tmp_path, folder: str, port: int) -> HostService:
    return HostService(hosting(HubConfig(rounds=100_000, workers=1, batch_size=8,
                                          eval_every=0), tmp_path / folder, port=port,
                                bind="127.0.0.1", advertise=False, train_here=False, pin=PIN,
                                linger_s=0.2)).start()


def joined(hub: HostService, port: int):
    """A worker that joined (the session's one member, with its key) and its service."""
    service = worker(port, PIN, "vm").start()
    wait_for(lambda: saw(service, Joined) or not service.running, 60, "joining")
    assert saw(service, Joined), service.error
    assert hub.session is not None
    wait_for(lambda: len(hub.session.core.members) == 1, 30, "the member")
    (member,) = hub.session.core.members.members()
    return service, member


def refused(port: int) -> str | None:
    """How a fresh join with the PIN ends (its error code; None: it joined)."""
    service = worker(port, PIN, "vm").start()
    try:
        wait_for(lambda: saw(service, Joined) or not service.running, 60, "an answer")
        return None if saw(service, Joined) else service.error_code
    finally:
        service.stop()
        service.join(10)


@pytest.mark.slow
def test_removed_allowed_again_blocked_and_allowed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    port = free_ports()
    target = JoinTarget(host="127.0.0.1", port=port, label="hub")
    hub = host(tmp_path, "one", port)
    try:
        service, member = joined(hub, port)
        hub.kick(member.worker_id)
        assert service.wait(30) and service.error_code == "BANNED"
        assert removed_by(target, "vm") == "removed"
        assert refused(port) == "BANNED"  # this session, even with the PIN
        [machine] = hub.removed_machines()
        assert (machine.key, machine.blocked) == (member.key, False)

        hub.allow_again(member.key)
        wait_for(lambda: not hub.removed_machines(), 10, "allowed again")
        service, member = joined(hub, port)  # with the PIN, in the same session
        assert removed_by(target, "vm") is None

        hub.kick(member.worker_id, block=True)
        assert service.wait(30) and service.error_code == "BLOCKED"
        assert removed_by(target, "vm") == "blocked"
    finally:
        hub.stop()
        hub.join(30)
    later = host(tmp_path, "two", port)  # the hub's next session (its key, a new folder)
    try:
        wait_for(lambda: later.session is not None and later.running, 30, "the next session")
        assert [m.blocked for m in later.removed_machines()] == [True]
        assert refused(port) == "BLOCKED"
        later.allow_again(member.key)
        wait_for(lambda: not later.removed_machines(), 10, "allowed again")
        service, _ = joined(later, port)
        service.stop()
        service.join(10)
    finally:
        later.stop()
        later.join(30)
