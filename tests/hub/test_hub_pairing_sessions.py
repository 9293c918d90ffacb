"""Paired machines across sessions, with the real services on loopback sockets: a worker
that paired once joins the same hub's next session without the PIN, and needs the PIN again
once the host removed it (or turned the feature off)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.host import hosting, joining
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.service import HostService, JoinService, remembers
from computeshare_desktop.service.options import JoinTarget
from computeshare_desktop.service.paired import forget_hub, paired_machines
from computeshare_desktop.worker import pick_device
from helpers.net import free_ports

PIN = "975310"


def run_session(out: Path, port: int, worker_pin: str, pin: str = PIN) -> JoinService:
    """A 2-round session of one worker called "laptop"; the worker once it has ended."""
    config = HubConfig(rounds=2, workers=1, batch_size=8, eval_every=0)
    hub = HostService(hosting(config, out, port=port, bind="127.0.0.1", advertise=False,
                               train_here=False, pin=pin, linger_s=0.2)).start()
    target = JoinTarget(host="127.0.0.1", port=port, label="hub")
    worker = JoinService(joining(target, pin=worker_pin, name="laptop",
                                  device=pick_device("cpu"), follow_hub=False, give_up_s=10.0,
                                  first_contact_s=10.0, wait_s=20.0)).start()
    try:
        assert worker.wait(60), "the worker did not end"
        if worker.result is None:
            hub.stop()
        assert hub.wait(60), "the hub did not end"
    finally:
        worker.stop()
        hub.stop()
        worker.join(10)
        hub.join(10)
    return worker


@pytest.mark.slow
def test_a_paired_machine_joins_a_later_session_without_the_pin_until_removed(
        tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    port = free_ports()
    target = JoinTarget(host="127.0.0.1", port=port, label="hub")
    first = run_session(tmp_path / "one", port, PIN)
    assert first.result is not None, first.error
    assert remembers(target, "laptop")  # what the Join dialog's sentence rests on
    (machine,) = paired_machines().machines()
    assert machine.name.startswith("laptop")

    # the same hub's next session: a new folder and PIN, and no PIN typed on the worker
    second = run_session(tmp_path / "two", port, "", pin="112358")
    assert second.error is None and second.result is not None

    # the host removes it: the next session refuses it without the PIN...
    assert paired_machines().forget(machine.key)
    third = run_session(tmp_path / "three", port, "")
    assert third.result is None and third.error_code == "NOT_PAIRED"
    assert forget_hub(target, "laptop") and not remembers(target, "laptop")
    # ...and with the PIN it pairs again, and is listed again
    assert run_session(tmp_path / "four", port, PIN).result is not None
    assert [m.key for m in paired_machines().machines()] == [machine.key]

    # turned off: a new session lets in only the machines that pair in it
    paired_machines().set_enabled(False)
    assert run_session(tmp_path / "five", port, "").error_code == "NOT_PAIRED"
