"""What a worker remembers of a hub agrees with the hub: a machine that proved the PIN is
remembered even if it only waited as a spare (the hub lists it among its paired machines),
and a machine the host removed forgets that hub's key (the hub forgot it too) and notes why.
Real services on loopback sockets."""

from __future__ import annotations

import pytest
from helpers.host import hosting
from helpers.net import PIN, RunningHub, free_ports, wait_for

from computeshare_desktop.events import Joined, SessionFull
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.service import HostService, remembers
from computeshare_desktop.service.join import removed_by
from computeshare_desktop.service.options import JoinTarget
from computeshare_desktop.service.paired import paired_machines
from helpers.host import saw, worker


@pytest.mark.slow
def test_a_spare_that_paired_joins_the_hubs_next_session_without_the_pin(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    port = free_ports()
    target = JoinTarget(host="127.0.0.1", port=port, label="hub")
    # session 1: the host's own machine takes the only shard; the worker pairs, then waits
    hub = HostService(hosting(HubConfig(rounds=10_000, workers=1, batch_size=8, eval_every=0),
                               tmp_path / "one", port=port, bind="127.0.0.1",
                               advertise=False, train_here=True, pin=PIN,
                               linger_s=0.2)).start()
    spare = worker(port, PIN, "spare").start()
    try:
        wait_for(lambda: saw(spare, SessionFull), 60, "the spare waiting for a shard")
        listed = [m.name for m in paired_machines().machines()]
        assert any(name.startswith("spare") for name in listed), listed
        assert remembers(target, "spare")  # the hub lists it: so it remembers the hub
    finally:
        spare.stop()
        hub.stop()
        spare.join(10)
        hub.join(30)
    # session 2 of the same hub (a new PIN): the spare joins without the PIN
    hub = HostService(hosting(HubConfig(rounds=2, workers=1, batch_size=8, eval_every=0),
                               tmp_path / "two", port=port, bind="127.0.0.1",
                               advertise=False, train_here=False, pin="112358",
                               linger_s=0.2)).start()
    back = worker(port, "", "spare").start()
    try:
        wait_for(lambda: saw(back, Joined) or not back.running, 60, "the spare joining")
        assert saw(back, Joined), back.error
    finally:
        back.stop()
        hub.stop()
        back.join(10)
        hub.join(30)


def test_a_removed_machine_forgets_the_hub_and_knows_why(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    hub = RunningHub(tmp_path / "hub", workers=1, rounds=100_000, batch_size=8, eval_every=0)
    target = JoinTarget(host="127.0.0.1", port=hub.port, label="hub")
    service = worker(hub.port, PIN, "vm").start()
    try:
        wait_for(lambda: hub.session.server.version >= 2, 60, "training")
        assert remembers(target, "vm") and not removed_by(target, "vm")
        (member,) = hub.session.core.members.members()
        hub.server.kick(member.worker_id)
        assert service.wait(30), "the removed worker did not end"
        assert service.error_code == "BANNED"
        assert not remembers(target, "vm")  # its Join dialog asks for the PIN...
        assert removed_by(target, "vm")  # ...and says why
    finally:
        service.stop()
        service.join(10)
        hub.close()
