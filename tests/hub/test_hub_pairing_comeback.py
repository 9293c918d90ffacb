"""Workers come back: a worker whose host stopped the session waits for the hub to serve
again and rejoins the resumed session without the PIN (the command line's way, by address)."""

from __future__ import annotations

import threading

import pytest

from helpers.host import hosting, joining
from computeshare_desktop.events import HubStopped, Joined, PairedWith
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.service import HostService, JoinService, Tagged
from computeshare_desktop.service.comeback import run_coming_back
from computeshare_desktop.service.options import JoinTarget
from computeshare_desktop.worker import pick_device
from helpers.net import free_ports, wait_for

ROUNDS = 30


def hub(out, port: int, pin: str, resume: bool = False) -> HostService:
    config = HubConfig(rounds=ROUNDS, workers=1, batch_size=8, eval_every=0)
    return HostService(hosting(config, out, port=port, bind="127.0.0.1", advertise=False,
                                train_here=False, pin=pin, linger_s=0.2,
                                resume=resume)).start()


def run(service: JoinService) -> None:
    """What ``join`` does with each worker: start it, wait for its end, raise its error."""
    service.start()
    assert service.wait(120)
    if service.error is not None:
        raise service.error


@pytest.mark.slow
def test_a_stopped_worker_rejoins_the_resumed_session_without_the_pin(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    port = free_ports()
    first = hub(tmp_path / "run", port, "975310")
    heard: list[Tagged] = []
    plan = joining(JoinTarget(host="127.0.0.1", port=port, label="hub"), pin="975310",
                    name="laptop", device=pick_device("cpu"), follow_hub=False, wait_s=20.0)
    last: list[JoinService] = []
    said: list[str] = []
    worker = threading.Thread(target=lambda: last.append(run_coming_back(
        JoinService(plan, on_event=heard.append), run, 60.0, heard.append, said.append)))
    worker.start()
    second: HostService | None = None
    try:
        wait_for(lambda: first.session is not None and first.session.version >= 3, 60,
                 "training")
        first.stop()
        assert first.join(30)
        wait_for(lambda: len(said) == 2, 20, "the worker to see the session close")
        assert "waiting up to 60 s" in said[0] and "once it is resumed" in said[1]
        second = hub(tmp_path / "run", port, "112358", resume=True)  # a new PIN
        worker.join(120)
        assert last and last[0].result is not None, last
        assert second.wait(30) and second.result is not None
        stop = next(i for i, t in enumerate(heard) if isinstance(t.event, HubStopped))
        after = [type(t.event) for t in heard[stop:]]
        assert Joined in after and PairedWith not in after  # no pairing: no PIN
    finally:
        for host in (first, second):
            if host is not None:
                host.stop()
                host.join(20)
        worker.join(30)


def test_join_comes_back_by_default():
    """``join`` waits 10 minutes for a stopped session to be resumed (``--come-back
    SECONDS``); ``--come-back 0`` ends it at once with exit code 7."""
    from computeshare_desktop.cli.commands import join_options
    from computeshare_desktop.cli.main import build_parser

    def parsed(*flags: str) -> float:
        return join_options(build_parser().parse_args(["join", "127.0.0.1:7341", *flags])
                            ).come_back_s

    assert parsed() == 600.0 and parsed("--come-back", "90") == 90.0
    assert parsed("--come-back", "0") == 0.0
