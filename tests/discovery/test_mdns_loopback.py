"""Real mDNS on 127.0.0.1: a hub's advert is seen, updated and withdrawn by a browser."""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time

import pytest
from mdns_helpers import LOOPBACK, browser, make_advert, session_with_id, wait_for
from zeroconf import IPVersion, Zeroconf

from computeshare_desktop.discovery import Advertiser, DiscoveredSession


def test_advert_is_seen_updated_and_removed_on_close() -> None:
    advert = make_advert()
    changes: list[list[DiscoveredSession]] = []
    with browser(on_change=changes.append) as b:
        started = time.monotonic()
        adv = Advertiser(advert, interfaces=LOOPBACK).start()
        try:
            seen = wait_for(lambda: session_with_id(b, advert.session_id), 5.0, "the advert")
            assert time.monotonic() - started < 4.0
            assert seen.advert == advert and seen.addresses == ("127.0.0.1",)
            assert seen.address == "tcp://127.0.0.1:5555"
            assert seen.instance == adv.instance and seen.name == advert.name

            adv.update(dataclasses.replace(advert, joined=2, state="training"))
            updated = wait_for(lambda: (s := session_with_id(b, advert.session_id))
                               and s.advert.state == "training" and s, 3.0, "the update")
            assert updated.advert.joined == 2 and updated.advert.full
        finally:
            closed = time.monotonic()
            adv.close()
        wait_for(lambda: session_with_id(b, advert.session_id) is None, 3.0, "the goodbye")
        assert time.monotonic() - closed < 3.0
    ours = [[s for s in c if s.advert.session_id == advert.session_id] for c in changes]
    assert [len(c) for c in ours][-1] == 0 and any(ours)


def test_two_hubs_with_the_same_name_do_not_clash() -> None:
    first, second = make_advert(), make_advert()
    assert first.name == second.name
    with browser() as b, Advertiser(first, interfaces=LOOPBACK) as a1, \
            Advertiser(second, interfaces=LOOPBACK, probe=False) as a2:
        assert a1.instance != a2.instance
        s1 = wait_for(lambda: session_with_id(b, first.session_id), 5.0, "hub 1")
        s2 = wait_for(lambda: session_with_id(b, second.session_id), 5.0, "hub 2")
        assert (s1.advert, s2.advert) == (first, second)
        a1.close()
        wait_for(lambda: session_with_id(b, first.session_id) is None, 3.0, "hub 1 goodbye")
        time.sleep(0.5)
        assert session_with_id(b, second.session_id) == s2  # hub 2's records survive


def test_updates_are_throttled_and_the_last_one_gets_out() -> None:
    advert = make_advert(expected=50)
    zc = Zeroconf(interfaces=LOOPBACK, ip_version=IPVersion.V4Only)
    published: list[int] = []
    real_update = zc.update_service
    zc.update_service = lambda info: (published.append(time.monotonic()),  # type: ignore
                                      real_update(info))
    try:
        with browser() as b, Advertiser(advert, interfaces=LOOPBACK, zeroconf=zc, probe=False,
                                    min_interval_s=1.0) as adv:
            wait_for(lambda: session_with_id(b, advert.session_id), 5.0, "the advert")
            for joined in range(1, 41):  # a round every 25 ms for a second
                adv.update(dataclasses.replace(advert, joined=joined))
                time.sleep(0.025)
            wait_for(lambda: (s := session_with_id(b, advert.session_id))
                     and s.advert.joined == 40, 4.0, "the last update")
            assert 1 <= len(published) <= 3
            gaps = [later - earlier for earlier, later in itertools.pairwise(published)]
            assert all(gap >= 0.9 for gap in gaps)
    finally:
        zc.close()


def test_flush_publishes_at_once_and_close_is_idempotent() -> None:
    advert = make_advert()
    with browser() as b:
        adv = Advertiser(advert, interfaces=LOOPBACK, min_interval_s=60.0).start()
        wait_for(lambda: session_with_id(b, advert.session_id), 5.0, "the advert")
        adv.update(dataclasses.replace(advert, state="training"))
        adv.flush()
        wait_for(lambda: session_with_id(b, advert.session_id).advert.state == "training",
                 2.0, "the flushed update")
        adv.close()
        adv.close()
        adv.update(advert)  # after close: ignored, no thread restarted
        with pytest.raises(RuntimeError):
            adv.start()
    assert not [t for t in threading.enumerate() if t.name.startswith("computeshare-")]
