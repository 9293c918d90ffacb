"""A hub session's outputs when it stops, resumes or meets a disk error."""

from __future__ import annotations

import errno
import json

import pytest
import torch

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.events import DiskError, HubStopped, Stopped
from computeshare_desktop.hub import HubConfig, HubSession
from computeshare_desktop.hub.outputs import OutputDir
from helpers.net import RunningHub, WorkerThread, wait_for

CONFIG = dict(workers=1, rounds=100000, batch_size=8, eval_every=0)


def session(out, *, resume=False, events=None, **config):
    return HubSession(HubConfig(**{**CONFIG, **config}), pin="246810", hub_key="k" * 40,
                      out_dir=out, resume=resume, on_event=events.append if events is not None
                      else None)


def test_a_folder_that_holds_a_session_is_refused_without_resume(tmp_path):
    session(tmp_path).close()
    with pytest.raises(ConfigError, match="already holds a session"):
        session(tmp_path)
    session(tmp_path, resume=True).close()  # resuming it is fine


class FullDisk(OutputDir):
    """Every write fails the way a full disk does."""

    def append_metric(self, record):
        raise OSError(errno.ENOSPC, "No space left on device")

    def save_checkpoint(self, state):
        raise OSError(errno.ENOSPC, "No space left on device")


def test_disk_errors_skip_the_write_warn_and_training_goes_on(tmp_path):
    hub = RunningHub(tmp_path, checkpoint_every=5, **CONFIG)
    hub.session.out = FullDisk(tmp_path)
    worker = WorkerThread(hub.port, "w")
    try:
        wait_for(lambda: len(hub.rounds()) >= 12, 60, "rounds despite a full disk")
        errors = hub.of_kind(DiskError)
        assert {e.what for e in errors} >= {"metrics", "checkpoint"}
        assert "No space" in errors[0].error
        assert hub.session.disk_errors >= 12
        assert hub.thread.is_alive()
    finally:
        worker.close()
        hub.close()


def test_stopping_tells_the_workers_and_saves_the_model(tmp_path):
    hub = RunningHub(tmp_path, **CONFIG)
    worker = WorkerThread(hub.port, "w")
    try:
        wait_for(lambda: len(hub.rounds()) >= 5, 60, "5 rounds")
        hub.stop.set()
        hub.thread.join(10)
        told = __import__("time").monotonic()
        assert hub.result is None
        path = hub.session.save_stopped()
        worker.thread.join(5)
        gone = __import__("time").monotonic()
    finally:
        worker.close()
        hub.close()
    assert gone - told < 2.0, "the worker should end at once"
    from computeshare_desktop.errors import HubStoppedError

    assert isinstance(worker.error, HubStoppedError) and worker.error.exit_code == 7
    assert "stopped the session" in str(worker.error)
    assert isinstance(worker.events[-1], HubStopped)
    version = hub.session.server.version
    state = torch.load(path, weights_only=True)
    assert torch.equal(torch.cat([v.flatten() for v in state.values()]),
                       torch.cat([v.detach().flatten()
                                  for v in hub.session.server.model.state_dict().values()]))
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["version"] == version
    assert hub.of_kind(Stopped)[0].version == version


def test_resume_cuts_the_metrics_back_to_the_checkpoint(tmp_path):
    hub = RunningHub(tmp_path, checkpoint_every=10, **CONFIG)
    worker = WorkerThread(hub.port, "w")
    try:
        wait_for(lambda: len(hub.rounds()) >= 25, 60, "25 rounds")
    finally:
        worker.close()
        hub.close()  # a crash-like end: no stop save, the checkpoint lags the metrics
    saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)["version"]
    lines = (tmp_path / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert max(json.loads(x)["version"] for x in lines) > saved
    with open(tmp_path / "metrics.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"type": "round", "vers')  # torn by the crash
    resumed = session(tmp_path, resume=True)
    resumed.close()
    versions = [json.loads(x)["version"] for x in
                (tmp_path / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    assert versions == list(range(1, saved + 1))  # each round once, none past the checkpoint
