"""The ETA's pace (``gui.eta``, no Qt): a fake clock, rounds in, seconds out. It starts over
when the training workers change and leaves out the first rounds after the change, so a
rejoin's stall and its model-and-shard rounds do not inflate the ETA (fourfold, before)."""

from __future__ import annotations

import pytest

from computeshare_desktop.events import RoundClosed, WorkerInfo, WorkerLeft
from computeshare_desktop.gui.eta import SETTLE_ROUNDS, RoundPace
from computeshare_desktop.gui.progress_state import ProgressState
from computeshare_desktop.service import Tagged
from helpers.clock import Clock


def naive_eta(marks: list[tuple[float, int]], remaining: int, window: int = 40) -> float:
    """The ETA before: the pace over the last ``window`` rounds, whoever trained them."""
    (t0, v0), (t1, v1) = marks[-window], marks[-1]
    return remaining * (t1 - t0) / (v1 - v0)


def test_a_steady_session_after_its_first_rounds():
    pace, now = RoundPace(), 0.0
    for version in range(1, 21):
        now += 3.0 if version <= SETTLE_ROUNDS else 0.5  # warm-up rounds are slow
        pace.add(now, version, {1, 2})
        if version <= SETTLE_ROUNDS:
            assert pace.eta_s(100) is None  # still settling: no ETA rather than a wrong one
    assert pace.rounds_per_s() == pytest.approx(2.0)
    assert pace.eta_s(80) == pytest.approx(40.0)
    assert pace.eta_s(-5) == 0


def test_a_rejoin_does_not_inflate_the_eta():
    pace, now, version, marks = RoundPace(), 0.0, 0, []

    def round_(seconds: float, team: set[int]) -> None:
        nonlocal now, version
        now += seconds
        version += 1
        pace.add(now, version, team)
        marks.append((now, version))

    for _ in range(60):
        round_(0.1, {1, 2})
    round_(6.0, {1})  # worker 2 went silent: the hub waited for it, then went on alone
    for _ in range(5):
        round_(0.2, {1})
    for seconds in (2.0, 1.5, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1):  # it rejoins as worker 3
        round_(seconds, {1, 3})
    truth = 1000 * 0.1
    assert pace.eta_s(1000) == pytest.approx(truth, rel=0.05)
    assert naive_eta(marks, 1000) > 3 * truth  # what the window over everyone showed


def test_rounds_that_go_back_start_over():
    pace = RoundPace(settle=1)
    for version, now in ((10, 1.0), (11, 2.0), (12, 3.0)):
        pace.add(now, version, {1})
    assert pace.rounds_per_s() == pytest.approx(1.0)
    pace.add(4.0, 5, {1})  # a resumed session counts from an earlier checkpoint
    assert pace.rounds_per_s() is None


def round_closed(version: int, ids: tuple[int, ...]) -> Tagged:
    workers = tuple(WorkerInfo(i, f"w{i}", "CPU", i - 1, ready=True, pushed=version)
                    for i in ids)
    return Tagged("hub", RoundClosed(
        round=version, version=version, steps=1, loss=0.5, contributors=len(ids),
        rejected=0, bytes_in=10, bytes_out=10, payload_bytes=20, samples=64, seconds=0.1,
        complete=True, compute_s=0.05, busy=0.5, workers=workers))


def test_the_windows_eta_after_a_rejoin():
    clock = Clock()
    state = ProgressState("hub", total_rounds=2000, clock=clock, expected_workers=2)
    version = 0
    for ids, seconds, count in (((1, 2), 0.1, 50), ((1,), 6.0, 1), ((1, 3), 2.0, 1),
                                ((1, 3), 0.1, 10)):
        for _ in range(count):
            clock.now += seconds
            version += 1
            state.apply([round_closed(version, ids)])
        if ids == (1,):
            state.apply([Tagged("hub", WorkerLeft(
                WorkerInfo(2, "w2", "CPU", 1, pushed=version), "silent"))])
    assert state.phase == "training" and state.version == 62
    assert state.eta_s() == pytest.approx((2000 - 62) * 0.1, rel=0.05)
