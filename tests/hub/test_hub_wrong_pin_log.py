"""A wrong PIN is said once in the hub's log, by the pairing's own line (who, from where, how
many in a row), and "pairing paused" only when it is (not three lines for one wrong PIN, one of
them "pairing paused for 0 s")."""

from __future__ import annotations

import logging

import pytest
from helpers.hub import T0, WRONG, make_hub, pair, reject_code

from computeshare_desktop.protocol import RejectCode


def pin_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if "PIN" in r.getMessage() or "refused requests" in r.getMessage()]


def test_a_wrong_pin_is_one_line_and_a_lockout_says_how_long(caplog) -> None:
    hub = make_hub()
    caplog.set_level(logging.INFO, logger="computeshare_desktop")
    reply = pair(hub, b"p1", T0, pin=WRONG)
    assert reject_code(reply) is RejectCode.BAD_PIN
    hub.tick(T0 + 120)  # the refusal summary would have been written by now
    assert pin_lines(caplog) == ["Wrong PIN from 'p1' at lan/p1 (1 in a row)"]
    caplog.clear()
    free = hub.pairing.lockout.free_attempts = 2  # each pairing takes ~1 s of key stretching
    for n in range(2, free + 1):
        assert reject_code(pair(hub, b"p1", T0 + 60 * n, pin=WRONG)) is RejectCode.BAD_PIN
    lines = pin_lines(caplog)
    assert len(lines) == free - 1 and "paused" not in " ".join(lines[:-1])
    assert lines[-1].endswith(f"({free} in a row); pairing paused for 1 s")
    assert not any("paused for 0 s" in line for line in lines)
    # a try while paused is told how long, never "retry in 0 s"
    locked = pair(hub, b"p1", T0 + 60 * free + 0.6, pin=WRONG)
    assert reject_code(locked) is RejectCode.LOCKED_OUT and locked.detail == "retry in 1 s"
