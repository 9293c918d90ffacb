"""Where a session's events go: to the view's callback, or to a queue the view drains."""

from __future__ import annotations

from helpers.host import hosting
from computeshare_desktop.events import Finished, RoundClosed
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.service import HostService, Tagged
from helpers.net import free_ports


def host(tmp_path, **kwargs) -> HostService:
    config = HubConfig(rounds=40, workers=1, batch_size=8, eval_every=0)
    plan = hosting(config, tmp_path / "run", port=free_ports(), bind="127.0.0.1",
                    advertise=False, train_here=True, pin="975310", linger_s=0.5)
    return HostService(plan, **kwargs).start()


def test_a_view_with_a_callback_leaves_no_queue_growing(tmp_path, monkeypatch):
    """The command line listens through a callback and never drains: a queue filled anyway
    would hold every round of a session that runs for days."""
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    heard: list[Tagged] = []
    service = host(tmp_path, on_event=heard.append)
    assert service.wait(120), "the session did not finish"
    assert sum(isinstance(t.event, RoundClosed) for t in heard) == 40
    assert any(isinstance(t.event, Finished) for t in heard)
    assert {t.source for t in heard} >= {"hub", "local"}
    assert service.events.empty()


def test_a_view_without_a_callback_drains_every_event(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    service = host(tmp_path)
    assert service.wait(120), "the session did not finish"
    drained = service.drain()
    assert sum(isinstance(t.event, RoundClosed) for t in drained) == 40
    assert {t.source for t in drained} >= {"hub", "local"}
    assert service.drain() == []
