"""The virtual LAN kit itself: reachability, isolation, capture, multicast, mDNS, cleanup."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

import pytest

from testbed import netlab
from testbed.netlab import VirtualLan, list_namespaces, netns_available

pytestmark = pytest.mark.skipif(
    not netns_available(),
    reason="needs root and a working `ip netns add` (Linux network namespaces)")

PY = sys.executable

# Echoes one connection back; prints its port once listening.
ECHO_SERVER = r"""
import socket, sys
srv = socket.create_server((sys.argv[1], 0))
srv.settimeout(10)
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
conn.settimeout(10)
while data := conn.recv(65536):
    conn.sendall(data)
conn.close()
"""

ECHO_CLIENT = r"""
import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10) as s:
    s.sendall(bytes.fromhex(sys.argv[3]))
    s.shutdown(socket.SHUT_WR)
    got = b""
    while data := s.recv(65536):
        got += data
print(got.hex())
"""

# Joins 224.0.0.251 on the given address, prints "ready", then the first datagram's hex.
MCAST_LISTENER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", 5353))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
             socket.inet_aton("224.0.0.251") + socket.inet_aton(sys.argv[1]))
s.settimeout(10)
print("ready", flush=True)
print(s.recvfrom(65536)[0].hex(), flush=True)
"""

# No IP_MULTICAST_IF: the datagram must find its way by the LAN's 224.0.0.0/4 route.
MCAST_SENDER = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(3):
    s.sendto(bytes.fromhex(sys.argv[1]), ("224.0.0.251", 5353))
    time.sleep(0.05)
"""

UNREACHABLE_CHECK = r"""
import errno, socket, sys
for target in sys.argv[1:]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect((target, 53))  # picks a route; sends nothing
        print("reachable", target)
    except OSError as exc:
        assert exc.errno == errno.ENETUNREACH, exc
    finally:
        s.close()
print("done")
"""

ZC_REGISTER = r"""
import socket, sys
from zeroconf import IPVersion, ServiceInfo, Zeroconf
addr = sys.argv[1]
zc = Zeroconf(interfaces=[addr], ip_version=IPVersion.V4Only)
info = ServiceInfo("_cstest._tcp.local.", "netlab-a._cstest._tcp.local.",
                   addresses=[socket.inet_aton(addr)], port=5555, properties={"v": "1"},
                   server="netlab-a.local.")
zc.register_service(info)
print("registered", flush=True)
sys.stdin.read()
zc.unregister_service(info)
zc.close()
"""

ZC_BROWSE = r"""
import json, sys, threading, time
from zeroconf import IPVersion, ServiceBrowser, ServiceStateChange, Zeroconf
TYPE = "_cstest._tcp.local."
zc = Zeroconf(interfaces=[sys.argv[1]], ip_version=IPVersion.V4Only)
names, added = [], threading.Event()
def on_change(zeroconf, service_type, name, state_change):
    if state_change is ServiceStateChange.Added:
        names.append(name)
        added.set()
start = time.monotonic()
browser = ServiceBrowser(zc, TYPE, handlers=[on_change])
result = {"found": added.wait(10)}
if names:
    info = zc.get_service_info(TYPE, names[0], timeout=3000)
    result.update(name=names[0], addresses=info.parsed_addresses() if info else [],
                  port=info.port if info else None, seconds=time.monotonic() - start)
browser.cancel()
zc.close()
print(json.dumps(result), flush=True)
"""


@pytest.fixture
def lan():
    with VirtualLan(["a", "b"]) as lan:
        yield lan


def _root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def _root_ipv4() -> list[str]:
    out = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True,
                         check=True).stdout
    return [line.split()[3].split("/")[0] for line in out.splitlines()]


def _reap(proc: subprocess.Popen) -> None:
    """Kill `proc` if still running, wait for it and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=5)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe:
            pipe.close()


def _echo(lan: VirtualLan, payload: bytes) -> bytes:
    server = lan.popen("a", [PY, "-c", ECHO_SERVER, lan.address("a")],
                       stdout=subprocess.PIPE, text=True)
    try:
        port = server.stdout.readline().strip()
        client = lan.run("b", [PY, "-c", ECHO_CLIENT, lan.address("a"), port, payload.hex()],
                         capture_output=True, text=True, check=True)
        assert server.wait(timeout=10) == 0
    finally:
        _reap(server)
    return bytes.fromhex(client.stdout.strip())


def test_hosts_reach_each_other_over_tcp(lan):
    payload = secrets.token_bytes(64)
    assert _echo(lan, payload) == payload
    assert lan.address("a") != lan.address("b")
    assert lan.interface("a") == "eth0"


def test_hosts_cannot_reach_the_real_network(lan):
    ns = lan.namespace("b")
    routes = subprocess.run(["ip", "-n", ns, "-4", "route", "show", "table", "main"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert sorted(r.split()[0] for r in routes) == sorted([lan.subnet, "224.0.0.0/4"]), routes
    assert "default" not in " ".join(routes)
    targets = ["8.8.8.8", "1.1.1.1"] + [a for a in _root_ipv4() if not a.startswith("127.")]
    check = lan.run("b", [PY, "-c", UNREACHABLE_CHECK, *targets],
                    capture_output=True, text=True, check=True)
    assert check.stdout.split() == ["done"], check.stdout
    switch = subprocess.run(["ip", "-n", lan.switch_namespace, "-4", "-o", "addr"],
                            capture_output=True, text=True, check=True).stdout
    assert [line.split()[1] for line in switch.splitlines()] == ["lo"]  # the bridge has no IP


def test_a_pulled_cable_cuts_a_host_off_until_it_is_plugged_back(lan):
    def routes() -> list[str]:
        return subprocess.run(["ip", "-n", lan.namespace("b"), "-4", "route", "show"],
                              capture_output=True, text=True, check=True).stdout.splitlines()

    before = routes()
    lan.set_link("b", up=False)
    try:
        probe = lan.run("b", [PY, "-c", "import socket, sys; socket.create_connection("
                                         "(sys.argv[1], 9), timeout=5)", lan.address("a")],
                        capture_output=True, text=True)
    finally:
        lan.set_link("b", up=True)
    assert probe.returncode != 0 and "unreachable" in probe.stderr, probe.stderr
    assert sorted(routes()) == sorted(before)
    payload = secrets.token_bytes(16)
    assert _echo(lan, payload) == payload


def test_capture_sees_tcp_token(lan):
    token = secrets.token_bytes(32)
    with lan.capture("a") as cap:
        assert _echo(lan, token) == token
    frames = cap.stop()
    assert frames and all(isinstance(f, bytes) for f in frames)
    assert token in cap.tcp_payload()
    assert token in cap.tcp_payload(outgoing=False)  # b -> a
    assert token in cap.tcp_payload(outgoing=True)  # the echo, a -> b
    assert token not in cap.tcp_payload(port=9)
    assert token not in cap.udp_payload()
    assert cap.drops == 0


def test_multicast_crosses_the_bridge_and_is_captured(lan):
    token = secrets.token_bytes(32)
    with lan.capture("a") as cap:
        listener = lan.popen("a", [PY, "-c", MCAST_LISTENER, lan.address("a")],
                             stdout=subprocess.PIPE, text=True)
        try:
            assert listener.stdout.readline().strip() == "ready"
            lan.run("b", [PY, "-c", MCAST_SENDER, token.hex()], check=True)
            received = listener.stdout.readline().strip()
            assert listener.wait(timeout=10) == 0
        finally:
            _reap(listener)
    assert bytes.fromhex(received) == token
    assert token in cap.udp_payload(5353)
    assert token not in cap.udp_payload(5354)


def test_zeroconf_finds_a_service_in_another_namespace(lan):
    register = lan.popen("a", [PY, "-c", ZC_REGISTER, lan.address("a")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert register.stdout.readline().strip() == "registered"
        browse = lan.run("b", [PY, "-c", ZC_BROWSE, lan.address("b")],
                         capture_output=True, text=True, check=True, timeout=30)
        result = json.loads(browse.stdout)
        register.stdin.close()
        assert register.wait(timeout=10) == 0
    finally:
        _reap(register)
    assert result["found"], browse.stderr
    assert result["name"] == "netlab-a._cstest._tcp.local."
    assert result["addresses"] == [lan.address("a")]
    assert result["port"] == 5555


def test_exit_deletes_namespaces_links_and_processes():
    links_before = _root_links()
    with VirtualLan(["hub", "w1", "w2"]) as lan:
        names = lan.namespaces
        assert set(names) <= set(list_namespaces())
        sleeper = lan.popen("w1", [PY, "-c", "import time; time.sleep(60)"])
    assert sleeper.poll() is not None  # killed and reaped by close()
    assert not set(names) & set(list_namespaces())
    assert _root_links() == links_before
    assert not any(lan.prefix in link for link in _root_links())


def test_exit_cleans_up_when_the_body_raises():
    with pytest.raises(RuntimeError, match="boom"):
        with VirtualLan(["a"]) as lan:
            lan.capture("a")
            raise RuntimeError("boom")
    assert not set(lan.namespaces) & set(list_namespaces())


CRASHING_CREATOR = r"""
import json, time
from testbed import netlab
lan = netlab.VirtualLan(["a", "b"]).__enter__()
sleeper = lan.popen("a", ["sleep", "60"])
print(json.dumps({"namespaces": lan.namespaces, "sleeper": sleeper.pid}), flush=True)
time.sleep(60)
"""


def test_namespaces_of_a_crashed_run_are_removed_by_the_next():
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(netlab.__file__)))
    creator = subprocess.Popen([PY, "-c", CRASHING_CREATOR], stdout=subprocess.PIPE, text=True,
                               env=env)
    try:
        left = json.loads(creator.stdout.readline())
    finally:
        creator.kill()  # SIGKILL: no __exit__ runs
        _reap(creator)
    assert set(left["namespaces"]) <= set(list_namespaces())
    with VirtualLan(["a"]):
        assert not set(left["namespaces"]) & set(list_namespaces())
    assert not os.path.exists(f"/proc/{left['sleeper']}/stat") or _is_zombie(left["sleeper"])


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_namespace_names_are_unique_per_instance():
    first, second = VirtualLan(["a"]), VirtualLan(["a"])
    assert first.namespace("a") != second.namespace("a")
    assert str(os.getpid()) in first.namespace("a")
    with pytest.raises(ValueError):
        VirtualLan(["a", "a"])
    with pytest.raises(ValueError):
        VirtualLan(["bad name"])
