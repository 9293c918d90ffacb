"""Checkpoints are written off the serving thread: a slow disk never holds up a round.

The state is copied on the serving thread (so the rounds may go on changing the model) and
written on the writer's own thread, in order; the stop path still waits for them and
leaves a whole checkpoint of the last version, and a disk error is still a DiskError event.
"""

from __future__ import annotations

import errno
import threading
import time
from typing import Iterator

import pytest
import torch

from computeshare_desktop.events import DiskError, RoundClosed
from computeshare_desktop.hub import HubConfig, HubSession
from computeshare_desktop.hub.outputs import OutputDir
from computeshare_desktop.hub.writer import CheckpointWriter, copy_tensors


def round_event(version: int) -> RoundClosed:
    return RoundClosed(round=version, version=version, steps=1, loss=1.0, contributors=1,
                       rejected=0, bytes_in=0, bytes_out=0, payload_bytes=0, samples=8,
                       seconds=0.01, complete=True, compute_s=0.01, busy=1.0)


def make_session(out_dir, events=None) -> HubSession:
    return HubSession(HubConfig(workers=1, rounds=1000, eval_every=0, checkpoint_every=1),
                      pin="1234", hub_key="k" * 40, out_dir=out_dir,
                      on_event=events.append if events is not None else None)


class SlowDisk(OutputDir):
    """Checkpoint writes wait for ``release``; what was written, on which thread, in order."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.release = threading.Event()
        self.written: list[int] = []
        self.threads: set[str] = set()

    def save_checkpoint(self, state) -> None:
        self.release.wait(30)
        self.threads.add(threading.current_thread().name)
        super().save_checkpoint(state)
        self.written.append(int(state["version"]))


@pytest.fixture
def slow(tmp_path) -> Iterator[tuple[HubSession, SlowDisk]]:
    """A session whose checkpoint writes wait until its disk is released."""
    session = make_session(tmp_path)
    disk = session.out = SlowDisk(tmp_path)
    try:
        yield session, disk
    finally:
        disk.release.set()
        session.close()


def advance(session: HubSession, version: int) -> None:
    """What a round does to the state: a new version with new weights."""
    session.server.version = version
    with torch.no_grad():
        for p in session.server.params:
            p.add_(1.0)


def test_a_slow_disk_does_not_hold_up_the_rounds_and_the_newest_checkpoint_wins(slow):
    session, disk = slow
    started = time.monotonic()
    for version in range(1, 101):
        advance(session, version)
        session._on_round(round_event(version))
        assert len(session._checkpoints.pending()) <= 2  # one writing, one waiting
    assert time.monotonic() - started < 5  # the rounds never waited for the disk
    assert disk.written == []
    assert session._checkpoints.pending() == [1, 100]
    disk.release.set()
    assert session._collect_writes(block=True) == []
    assert disk.written == [1, 100]  # in order: never an older one over a newer
    assert disk.threads and threading.current_thread().name not in disk.threads
    assert session.out.load_checkpoint()["version"] == 100


def test_the_snapshot_is_the_state_when_it_was_asked_for(slow):
    session, disk = slow
    advance(session, 7)
    expected = {k: v.clone() for k, v in session.server.model.state_dict().items()}
    session._on_round(round_event(7))
    advance(session, 8)  # the next rounds change the live model meanwhile
    disk.release.set()
    session._collect_writes(block=True)
    saved = session.out.load_checkpoint()
    assert saved["version"] == 7
    assert all(torch.equal(saved["model"][k], v) for k, v in expected.items())


def test_the_stop_save_waits_for_pending_writes_and_leaves_the_last_version(slow):
    session, disk = slow
    for version in range(1, 6):
        advance(session, version)
        session._on_round(round_event(version))
    advance(session, 9)  # stopped between two checkpoints
    threading.Timer(0.2, disk.release.set).start()
    session.save_stopped()
    assert disk.written == [1, 9]  # the one writing finished; 9 superseded 5
    assert session._checkpoints.pending() == []
    saved = session.out.load_checkpoint()
    assert saved["version"] == 9
    live = session.server.model.state_dict()
    assert all(torch.equal(saved["model"][k], v) for k, v in live.items())


class FullDisk(OutputDir):
    def save_checkpoint(self, state) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_write_is_a_disk_error_on_the_serving_thread_and_training_goes_on(tmp_path):
    events: list = []
    session = make_session(tmp_path, events)
    session.out = FullDisk(tmp_path)
    try:
        advance(session, 1)
        session._on_round(round_event(1))
        deadline = time.monotonic() + 10
        while not session.disk_errors and time.monotonic() < deadline:
            session.tick(time.monotonic())  # the transport ticks the session
            time.sleep(0.01)
        errors = [e for e in events if isinstance(e, DiskError)]
        assert [e.what for e in errors] == ["checkpoint"] and "No space" in errors[0].error
        assert session.save_checkpoint() is False  # the stop path says so too
        assert session.disk_errors == 2
    finally:
        session.close()


def test_copy_tensors_copies_every_tensor_and_keeps_the_rest():
    weights, buffer = torch.ones(3), torch.zeros(2)
    state = {"version": 4, "model": {"w": weights}, "momentum": [buffer], "mode": {"x": "y"}}
    copied = copy_tensors(state)
    weights.add_(1.0)
    buffer.add_(1.0)
    assert copied["version"] == 4 and copied["mode"] == {"x": "y"}
    assert torch.equal(copied["model"]["w"], torch.ones(3))
    assert torch.equal(copied["momentum"][0], torch.zeros(2))


def test_a_bug_in_a_write_is_raised_not_reported_as_a_disk_error():
    writer = CheckpointWriter("test-writer")

    def broken(state) -> None:
        raise ValueError("a bug")

    try:
        writer.submit(1, broken, {})
        try:
            writer.collect(block=True)
        except ValueError as exc:
            assert "a bug" in str(exc)
        else:
            raise AssertionError("the bug was swallowed")
    finally:
        writer.close()
