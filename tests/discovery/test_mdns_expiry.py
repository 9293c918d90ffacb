"""A hub killed without a goodbye (SIGKILL; TerminateProcess on Windows) leaves the browser
within a bounded time.

The bound: the records' TTL after the hub's last keep-alive, plus one browser check and one
probe, i.e. ttl_s + check_interval_s + probe_timeout_s = 2 + 0.25 + 0.5 s here (10 + 1 + 1 s
with the defaults). Measured here: about 2 s after the kill.
"""

from __future__ import annotations

import time

from mdns_helpers import browser, session_with_id, start_hub_process, wait_for

from computeshare_desktop.discovery import new_session_id

TTL_S = 2
BOUND_S = TTL_S + 0.25 + 0.5


def test_killed_hub_disappears_within_ttl_and_live_one_stays() -> None:
    session_id = new_session_id()
    with browser() as b:
        proc = start_hub_process(session_id, TTL_S)
        try:
            wait_for(lambda: session_with_id(b, session_id), 5.0, "the hub process's advert")
            alive_until = time.monotonic() + 2.25 * TTL_S  # only keep-alives keep it listed
            while time.monotonic() < alive_until:
                assert session_with_id(b, session_id) is not None, "a live hub expired"
                time.sleep(0.1)
        finally:
            proc.kill()
            killed = time.monotonic()
            proc.wait(timeout=10)
            proc.stdout.close()  # type: ignore[union-attr]
        wait_for(lambda: session_with_id(b, session_id) is None, BOUND_S + 2.0,
                 "the killed hub to expire")
        gone_after = time.monotonic() - killed
    assert gone_after < BOUND_S + 0.5, f"took {gone_after:.1f} s"
