"""The one throttle every progress report goes through."""

from __future__ import annotations

from computeshare_desktop.pacing import Throttle
from helpers.clock import Clock


def test_once_per_interval_and_always_when_forced() -> None:
    clock = Clock()
    throttle = Throttle(2.0, clock=clock)
    assert throttle.due() and not throttle.due()  # the first is due at once
    clock.now += 1.9
    assert not throttle.due() and throttle.due(force=True)
    clock.now += 1.9  # the forced one started the interval again
    assert not throttle.due()
    clock.now += 0.1
    assert throttle.due()


def test_waiting_starts_the_first_interval_now() -> None:
    clock = Clock()
    throttle = Throttle(2.0, waiting=True, clock=clock)
    assert not throttle.due()
    clock.now += 2.0
    assert throttle.due()
