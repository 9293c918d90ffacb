"""Hostile adverts on the LAN: dropped, logged once per instance, never crash the browser."""

from __future__ import annotations

import logging
import time

import pytest
from mdns_helpers import LOOPBACK, browser, make_advert, session_with_id, wait_for
from zeroconf import IPVersion, ServiceInfo, Zeroconf

from computeshare_desktop.discovery import SERVICE_TYPE, Advertiser, new_session_id, to_txt

BROWSER_LOG = "computeshare_desktop.discovery.browser"


def hostile_infos(tag: str) -> list[ServiceInfo]:
    """Services of our type whose TXT (or address) a browser must refuse."""
    future: dict[bytes, bytes | None] = {**to_txt(make_advert()), b"v": b"2"}
    cases: list[tuple[str, bytes | dict[bytes, bytes | None]]] = [
        ("garbage", b"\x05v=1\xff\xff\x40" + bytes(range(256))[:120]),
        ("future", future),
        ("empty", {}),
        ("ansi", {**to_txt(make_advert()), b"n": b"\x1b[2J\x1b[31mpwned"}),
        ("huge", {b"x%d" % i: b"y" * 200 for i in range(3)}),
    ]
    return [ServiceInfo(SERVICE_TYPE, f"hostile {name} {tag}.{SERVICE_TYPE}", port=6000,
                        properties=txt, server=f"hostile-{name}-{tag}.local.",
                        host_ttl=5, other_ttl=5, parsed_addresses=["127.0.0.1"])
            for name, txt in cases]


def test_hostile_adverts_are_dropped_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=BROWSER_LOG)
    tag, good = new_session_id(), make_advert()
    infos = hostile_infos(tag)
    zc = Zeroconf(interfaces=LOOPBACK, ip_version=IPVersion.V4Only)
    try:
        with browser() as b:
            for info in infos:
                zc.register_service(info, cooperating_responders=True)
            with Advertiser(good, interfaces=LOOPBACK, probe=False):
                seen = wait_for(lambda: session_with_id(b, good.session_id), 5.0, "the advert")
                assert seen.advert == good
                time.sleep(1.5)  # six browser checks re-read every hostile record
                assert [s.advert.session_id for s in b.sessions() if tag in s.instance] == []
                assert session_with_id(b, good.session_id) == seen  # the listener lives on
    finally:
        zc.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == BROWSER_LOG]
    for info in infos:
        about = [w for w in warnings if info.name in w]
        assert len(about) == 1, (info.name, about)
    future = next(w for w in warnings if "hostile future" in w)
    assert "newer than this ComputeShare" in future and "update ComputeShare" in future
