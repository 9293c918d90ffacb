"""``computeshare doctor`` on a namespace LAN: a real hub in one namespace, the doctor in
another. All good; then multicast dropped on the doctor's link (the report says multicast is
blocked and how to fix it); then the hub's port dropped by a firewall, with nft where it is
installed and with tc otherwise: both run here when both exist.

tc drops by classifying (u32) into an htb class whose queue is a ``blackhole``: htb, u32 and
blackhole are there wherever the shaped-LAN tests run, where ``action drop`` needs the
act_gact module, which this kernel does not have ("Failed to load TC action module").

One LAN, one hub and one doctor process for the module: torch loads once on each side, and
each check is one `main(["doctor", ...])` in that process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any, Iterator

import pytest

from testbed.netlab import TC, VirtualLan, netns_available

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not netns_available(), reason="needs root and `ip netns` (Linux network namespaces)")]

CLI = [sys.executable, "-m", "computeshare_desktop.cli"]
PORT = 47400
NFT = shutil.which("nft")

# Runs `computeshare doctor` once per line of JSON argv on stdin; answers one JSON line each.
# ["wait", host, port, interface] waits until the hub listens and its advert is seen.
DRIVER = r"""
import contextlib, io, json, socket, sys, time
from computeshare_desktop.cli.main import main
from computeshare_desktop.discovery import discover
print("ready", flush=True)
for line in sys.stdin:
    argv = json.loads(line)
    if argv[0] == "wait":
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection((argv[1], argv[2]), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        while time.monotonic() < deadline and not any(
                argv[1] in s.addresses for s in discover(0.5, interfaces=[argv[3]])):
            pass
        print(json.dumps({"code": 0, "out": ""}), flush=True)
        continue
    out = io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    print(json.dumps({"code": code, "out": out.getvalue(),
                      "seconds": time.monotonic() - start}), flush=True)
"""


class Lab:
    """The LAN, its hub and the doctor process in w1."""

    def __init__(self, lan: VirtualLan, hub: subprocess.Popen[str],
                 doctor: subprocess.Popen[str]) -> None:
        self.lan, self.hub, self.doctor = lan, hub, doctor
        self.hub_ip = lan.address("hub")

    def ask(self, argv: list[Any]) -> dict[str, Any]:
        assert self.doctor.stdin is not None and self.doctor.stdout is not None
        self.doctor.stdin.write(json.dumps(argv) + "\n")
        self.doctor.stdin.flush()
        line = self.doctor.stdout.readline()
        assert line, "the doctor process died"
        return json.loads(line)

    def check(self) -> tuple[int, dict[str, dict[str, Any]]]:
        """One doctor run against the hub: its exit code and its items by key."""
        said = self.ask(["doctor", "--hub", f"{self.hub_ip}:{PORT}", "--json",
                         "--mdns-wait", "2", "--interface", self.lan.address("w1")])
        report = json.loads(said["out"])
        return said["code"], {item["key"]: item for item in report["items"]}

    def sh(self, host: str, *argv: str) -> None:
        self.lan.run(host, list(argv), check=True, capture_output=True, timeout=10)

    def link_end(self, host: str, toward: bool) -> tuple[str, str]:
        """(namespace, device) of the host's link: its own end (what it sends), or the
        switch's end ``toward`` it (what it receives)."""
        if toward:
            return self.lan.switch_namespace, self.lan.hosts[host].port
        return self.lan.namespace(host), self.lan.interface(host)


def tc(ns: str, *args: str) -> None:
    proc = subprocess.run([TC, "-n", ns, *args], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, f"tc {' '.join(args)}: {proc.stderr}"


def tc_drop(ns: str, dev: str, *matches: list[str]) -> None:
    """Drop what leaves ``dev`` and matches any of ``matches`` (u32 words)."""
    tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10")
    tc(ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate",
       "10gbit")
    tc(ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate", "8kbit")
    tc(ns, "qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "blackhole")
    for prio, match in enumerate(matches, 1):
        tc(ns, "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", str(prio),
           "u32", *match, "flowid", "1:20")


def tc_clear(ns: str, dev: str) -> None:
    tc(ns, "qdisc", "del", "dev", dev, "root")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    out = tmp_path_factory.mktemp("doctor-hub")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with VirtualLan(["hub", "w1"]) as lan:
        hub = lan.popen("hub", [*CLI, "host", "--pin", "135790", "--workers", "1",
                                "--rounds", "5", "--port", str(PORT), "--interface",
                                lan.address("hub"), "--out", str(out), "--name", "doctor lab",
                                "--quiet"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, env=env)
        doctor = lan.popen("w1", [sys.executable, "-c", DRIVER], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert doctor.stdout is not None and doctor.stdout.readline() == "ready\n"
            lab = Lab(lan, hub, doctor)
            lab.ask(["wait", lab.hub_ip, PORT, lan.address("w1")])
            yield lab
        finally:
            for proc in (doctor, hub):
                proc.kill()
                proc.communicate(timeout=10)


def test_all_good(lab: Lab) -> None:
    code, items = lab.check()
    assert code == 0, items
    assert {k: i["status"] for k, i in items.items()} == {
        "interfaces": "ok", "mdns_self": "ok", "mdns_sessions": "ok", "ports": "ok",
        "hub": "ok", "link": "ok", "preset": "ok"}
    assert lab.lan.address("w1") in items["interfaces"]["detail"]
    assert f"{lab.hub_ip}:{PORT}" in items["mdns_sessions"]["detail"]
    link = items["link"]["facts"]
    assert 0 < link["rtt_ms"] < 100 and link["down_bytes_per_s"] > 1e6
    assert items["preset"]["facts"]["preset"] in ("lan", "wifi", "slow")


def test_multicast_dropped_on_the_link(lab: Lab) -> None:
    ends = [lab.link_end("w1", toward) for toward in (False, True)]
    try:
        for ns, dev in ends:  # both ways: what w1 sends and what reaches it
            tc_drop(ns, dev, ["match", "ip", "dst", "224.0.0.0/4"])
        code, items = lab.check()
    finally:
        for ns, dev in ends:
            tc_clear(ns, dev)
    assert code == 1
    sessions = items["mdns_sessions"]
    assert sessions["status"] == "fail", sessions
    assert "multicast is blocked" in sessions["cause"]
    assert "5353" in sessions["fix"] and "computeshare join HOST:PORT" in sessions["fix"]
    assert items["hub"]["status"] == "ok" and items["link"]["status"] == "ok"


@pytest.mark.parametrize("firewall", ["nft", "tc"])
def test_hub_port_blocked_by_a_firewall(lab: Lab, firewall: str) -> None:
    if firewall == "nft" and NFT is None:
        pytest.skip("nft is not installed here: the tc variant covers the blocked port")
    if firewall == "nft":
        assert NFT is not None
        lab.sh("hub", NFT, "add", "table", "inet", "cs_doctor")
        lab.sh("hub", NFT, "add", "chain", "inet", "cs_doctor", "input", "{", "type", "filter",
               "hook", "input", "priority", "0", ";", "policy", "accept", ";", "}")
        lab.sh("hub", NFT, "add", "rule", "inet", "cs_doctor", "input", "tcp", "dport",
               str(PORT), "drop")
        undo = [NFT, "delete", "table", "inet", "cs_doctor"]
    else:  # on the way into the hub: the switch's end of its link
        ns, dev = lab.link_end("hub", toward=True)
        tc_drop(ns, dev, ["match", "ip", "protocol", "6", "0xff", "match", "ip", "dport",
                          str(PORT), "0xffff"])
    try:
        code, items = lab.check()
    finally:
        if firewall == "nft":
            lab.sh("hub", *undo)
        else:
            tc_clear(ns, dev)
    assert code == 1
    hub = items["hub"]
    assert hub["status"] == "fail" and "does not answer" in hub["detail"], hub
    assert "firewall on the hub" in hub["cause"]
    assert f"{PORT}-{PORT + 2}" in hub["fix"] and "ufw allow" in hub["fix"]
    assert "link" not in items and items["mdns_sessions"]["status"] == "ok"
