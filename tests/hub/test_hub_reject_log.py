"""The hub's log of refusals: the first at once, then one summary line a minute at most
(async mode and floods refuse all the time; every refusal is still an event)."""

from __future__ import annotations

import logging

from computeshare_desktop.hub.rejects import LOG_EVERY_S, RejectLog
from computeshare_desktop.protocol import RejectCode


def test_one_summary_a_minute_and_the_tick_writes_what_was_held(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="computeshare_desktop.hub.core")
    log = RejectLog()
    log.note(RejectCode.BAD_PIN, b"\xab\xcd", "", 0.0, 3)
    for second in range(1, 60):
        code = RejectCode.BAD_PIN if second % 2 else RejectCode.MALFORMED
        log.note(code, b"\x01\x02", "garbage", float(second), 3)
        log.flush(second + 0.5, 3)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["[hub v3] refused requests: 1 × BAD_PIN (wrong PIN; last from peer abcd)"]
    log.flush(LOG_EVERY_S, 4)  # the tick, a minute after the first line
    assert len(caplog.records) == 2
    assert caplog.records[1].getMessage() == (
        "[hub v4] refused requests: 30 × BAD_PIN (wrong PIN: garbage; last from peer 0102), "
        "29 × MALFORMED (the message could not be parsed: garbage; last from peer 0102)")
    log.flush(LOG_EVERY_S * 5, 5)
    assert len(caplog.records) == 2  # nothing new: nothing said


def test_routine_refusals_are_not_logged_here(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="computeshare_desktop.hub.core")
    log = RejectLog()  # async updates go stale all the time: the host's window sums them up
    for second in range(100):
        log.note(RejectCode.STALE, b"\x01", "3 versions old", float(second), 3)
        log.note(RejectCode.DUPLICATE, b"\x01", "", float(second), 3)
    log.flush(1000.0, 3)
    assert caplog.records == []
