"""The worker loop against a real hub on loopback: refusals and a vanished hub."""

from __future__ import annotations

import time

import pytest

from computeshare_desktop.errors import HubUnreachableError, RejectedError
from computeshare_desktop.events import HubLost, HubSilent, SessionFull
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.worker import compute as worker_compute
from helpers.net import RunningHub, WorkerThread, wait_for


@pytest.fixture
def hub(tmp_path):
    running = RunningHub(tmp_path, workers=1, rounds=100000, batch_size=8, eval_every=0)
    yield running
    running.close()


def test_wrong_pin_is_refused_and_admits_nobody(hub):
    worker = WorkerThread(hub.port, "guesser", pin="000000")
    worker.join(30)
    assert isinstance(worker.error, RejectedError) and worker.error.code is RejectCode.BAD_PIN
    assert len(hub.session.core.members) == 0


def test_full_session_waits_for_a_shard_then_gives_up(hub):
    first = WorkerThread(hub.port, "first")
    try:
        wait_for(lambda: hub.session.server.version >= 3, 60, "training")
        started = time.monotonic()
        extra = WorkerThread(hub.port, "extra", give_up_s=1.0)
        extra.join(30)
        assert isinstance(extra.error, RejectedError)
        assert extra.error.code is RejectCode.SESSION_FULL
        assert time.monotonic() - started >= 1.0
        assert any(isinstance(e, SessionFull) for e in extra.events)
    finally:
        first.close()


def test_vanished_hub_makes_worker_give_up(hub):
    worker = WorkerThread(hub.port, "orphan", give_up_s=5.0, request_timeout_s=0.5)
    try:
        wait_for(lambda: hub.session.server.version >= 3, 60, "training")
        hub.server._goodbye = lambda poller: None  # vanishes: no word to the workers
        hub.close()
        gone = time.monotonic()
        worker.join(60)
        assert isinstance(worker.error, HubUnreachableError)
        assert time.monotonic() - gone < 20
        assert any(isinstance(e, HubSilent) for e in worker.events)
        lost = [e for e in worker.events if isinstance(e, HubLost)]
        assert lost and lost[0].silent_s < 10  # reported before giving up
    finally:
        worker.close()


def test_worker_building_another_architecture_stops_with_arch_mismatch(hub, monkeypatch):
    real_build = worker_compute.build_model
    monkeypatch.setattr(worker_compute, "build_model",
                        lambda name, info, **kw: real_build("mlp", info, **kw))
    worker = WorkerThread(hub.port, "odd")
    worker.join(30)
    assert isinstance(worker.error, RejectedError)
    assert worker.error.code is RejectCode.ARCH_MISMATCH
