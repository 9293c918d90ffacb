"""The network check's core (service/doctor.py) with a fake network: each failure names its
likely cause and its fix; the exit code is 1 only when something failed. And one real check
of a hub on loopback over the encrypted channel (transport/probe.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pytest

from computeshare_desktop.cli.main import main
from computeshare_desktop.discovery import DiscoveredSession, SessionAdvert
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.service.doctor import DoctorOptions, diagnose
from computeshare_desktop.service.doctor_checks import Address, PortCheck, kind_of
from computeshare_desktop.service.doctor_report import Status
from computeshare_desktop.transport.probe import LinkMeasure, ProbeFailed, measure_link

LAN = Address("eth0", "192.168.1.20", 24, "lan")
HUB = "192.168.1.30"
GOOD = LinkMeasure("s1", 21840, 0.0004, 110e6, 105e6)


def advert(session_id: str = "s1", port: int = 7341) -> DiscoveredSession:
    ad = SessionAdvert(session_id=session_id, name="lab", host="box", model="simplenet",
                       dataset="mnist-sample", joined=0, expected=2, state="waiting",
                       protocol=7, key_fingerprint="ab" * 8, port=port, pub_port=port + 1,
                       pair_port=port + 2, round=0, rounds=100)
    return DiscoveredSession(ad, (HUB,), f"lab-{session_id}._computeshare._tcp.local.")


@dataclass
class FakeNetwork:
    addrs: list[Address] = field(default_factory=lambda: [Address("lo", "127.0.0.1", 8,
                                                                  "loopback"), LAN])
    seen_self: float | None = 0.6
    found: list[DiscoveredSession] = field(default_factory=lambda: [advert()])
    port_check: PortCheck | None = None
    reach: str = ""
    link: LinkMeasure | ProbeFailed = GOOD

    def addresses(self) -> list[Address]:
        return self.addrs

    def route_to(self, host: str) -> str | None:
        return LAN.ip

    def own_advert(self, address: str, wait_s: float) -> float | None:
        return self.seen_self

    def sessions(self, interfaces: Sequence[str] | None, wait_s: float
                 ) -> list[DiscoveredSession]:
        return self.found

    def ports(self, port: int, address: str) -> PortCheck:
        return self.port_check or PortCheck(port)

    def reach_hub(self, host: str, port: int) -> str:
        return self.reach

    def measure(self, host: str, port: int) -> LinkMeasure:
        if isinstance(self.link, ProbeFailed):
            raise self.link
        return self.link


def run(net: FakeNetwork, hub: str | None = f"{HUB}:7341"):
    return diagnose(DoctorOptions(hub=hub, mdns_wait_s=0.1), net)


def test_all_good_passes_with_the_link_and_a_preset() -> None:
    report = run(FakeNetwork())
    assert report.ok and report.exit_code == 0, report.text()
    assert [i.key for i in report.items] == ["interfaces", "mdns_self", "mdns_sessions",
                                             "ports", "hub", "link", "preset"]
    link = report.item("link")
    assert link is not None and "round trip 0.4 ms" in link.detail and "880 Mbit/s" in link.detail
    preset = report.item("preset")
    assert preset is not None and preset.facts["preset"] == "lan"
    assert json.loads(json.dumps(report.to_json()))["ok"] is True
    assert report.text().endswith("All checks passed.")


def test_a_slow_link_suggests_a_lighter_preset() -> None:
    slow = LinkMeasure("s1", 11_000_000, 0.02, 1.2e6, 1.2e6)  # ResNet-18 over ~10 Mbit/s
    preset = run(FakeNetwork(link=slow)).item("preset")
    assert preset is not None and preset.facts["preset"] == "slow"


def test_the_hubs_advert_missing_means_multicast_is_blocked() -> None:
    report = run(FakeNetwork(found=[]))
    item = report.item("mdns_sessions")
    assert item is not None and item.status is Status.FAIL and report.exit_code == 1
    assert "multicast is blocked" in item.cause and "5353" in item.fix
    assert "computeshare join HOST:PORT" in item.fix
    # without a hub to compare with, no sessions is only a warning
    alone = run(FakeNetwork(found=[]), hub=None)
    assert alone.ok and alone.item("mdns_sessions").status is Status.WARN  # type: ignore[union-attr]
    # a warning is counted, not hidden behind "All checks passed"
    assert alone.text().endswith("All checks passed, 1 warning.")
    assert alone.exit_code == 0


def test_mdns_broken_here_says_firewall_or_multicast_off() -> None:
    item = run(FakeNetwork(seen_self=None)).item("mdns_self")
    assert item is not None and item.status is Status.FAIL
    assert "firewall" in item.cause and "UDP port 5353" in item.fix


def test_a_blocked_port_here_names_the_firewall_and_the_ports() -> None:
    net = FakeNetwork(port_check=PortCheck(7341, unreachable=((7342, "timeout"),)))
    item = run(net).item("ports")
    assert item is not None and item.status is Status.FAIL
    assert "7342 (timeout)" in item.detail and "ufw allow 7341:7343/tcp" in item.fix


def test_a_hub_that_does_not_answer_names_the_firewall_on_the_hub() -> None:
    net = FakeNetwork(reach=f"{HUB}:7341 does not answer within 2 s (a firewall, or the "
                           "wrong address?)")
    report = run(net)
    item = report.item("hub")
    assert item is not None and item.status is Status.FAIL
    assert "firewall on the hub" in item.cause and "7341-7343" in item.fix
    assert report.item("link") is None and report.exit_code == 1
    assert report.item("mdns_sessions").status is Status.OK  # type: ignore[union-attr]


def test_a_blocked_pairing_port_and_a_vpn_route() -> None:
    net = FakeNetwork(link=ProbeFailed("pairing", "the hub's pairing port did not answer"))
    item = run(net).item("link")
    assert item is not None and "7343" in item.cause and "lets only some" in item.cause
    vpn = Address("wg0", "10.8.0.2", 24, "vpn")
    net = FakeNetwork(addrs=[LAN, vpn], reach="connection refused by x: nothing listens")
    net.route_to = lambda host: vpn.ip  # type: ignore[method-assign]
    report = run(net)
    assert "VPN wg0" in report.item("hub").cause  # type: ignore[union-attr]
    assert report.item("interfaces").status is Status.FAIL  # type: ignore[union-attr]


def test_interface_kinds_and_no_lan() -> None:
    assert kind_of("docker0", "172.17.0.1") == "container"
    assert kind_of("tun0", "10.8.0.2") == "vpn"
    assert kind_of("en0", "169.254.3.4") == "link-local"
    report = run(FakeNetwork(addrs=[Address("lo", "127.0.0.1", 8, "loopback")]), hub=None)
    item = report.item("interfaces")
    assert item is not None and item.status is Status.FAIL and "same Wi-Fi" in item.fix
    with pytest.raises(ConfigError):
        diagnose(DoctorOptions(hub="no such:host:x"), FakeNetwork())


@pytest.mark.slow  # a real HubSession starts (~2 s idle, 8 s on a busy machine)
def test_the_real_probe_measures_a_hub_on_loopback(tmp_path: Path) -> None:
    from helpers.net import RunningHub

    hub = RunningHub(tmp_path, workers=1, rounds=5)
    try:
        measure = measure_link("127.0.0.1", hub.port, pings=3, repeats=1)
        assert measure.session_id == hub.session.session_id
        assert measure.numel == hub.session.server.numel
        assert measure.rtt_s < 0.5 and measure.down_bps > 1e6 and measure.up_bps > 1e6
    finally:
        hub.close()


def test_the_command_prints_json_and_exits_1_on_a_failure(capsys, monkeypatch) -> None:
    import computeshare_desktop.service.doctor as doctor

    monkeypatch.setattr(doctor, "LiveNetwork", lambda: FakeNetwork(found=[]))
    code = main(["doctor", "--hub", f"{HUB}:7341", "--json", "--mdns-wait", "0.5"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["ok"] is False
    assert {i["key"]: i["status"] for i in out["items"]}["mdns_sessions"] == "fail"
    monkeypatch.setattr(doctor, "LiveNetwork", lambda: FakeNetwork())
    assert main(["doctor", "--hub", HUB]) == 0
    assert "All checks passed." in capsys.readouterr().out


def test_help_lists_the_exit_codes(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["doctor", "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "--hub HOST[:PORT]" in out
    assert "0  every check passed" in out and "1  a check failed" in out


def test_an_interface_that_is_not_the_route_to_the_hub_is_the_wrong_one() -> None:
    wifi = Address("wlan0", "10.0.5.7", 24, "lan")
    net = FakeNetwork(addrs=[LAN, wifi])
    report = diagnose(DoctorOptions(hub=f"{HUB}:7341", mdns_wait_s=0.1,
                                    interfaces=("10.0.5.7",)), net)
    item = report.item("interfaces")
    assert item is not None and item.status is Status.WARN and report.ok
    assert "wrong interface" in item.cause and "--interface eth0" in item.fix


def test_a_check_that_raises_is_a_failure_in_the_report_not_a_crash() -> None:
    class Broken(FakeNetwork):
        def own_advert(self, address: str, wait_s: float) -> float | None:
            raise OSError("No route to host")

        def measure(self, host: str, port: int) -> LinkMeasure:
            raise RuntimeError("zmq went away")

    report = run(Broken())
    assert report.item("mdns_self").status is Status.FAIL  # type: ignore[union-attr]
    assert "No route to host" in report.item("mdns_self").detail  # type: ignore[union-attr]
    assert "zmq went away" in report.item("link").detail  # type: ignore[union-attr]
    assert report.exit_code == 1
