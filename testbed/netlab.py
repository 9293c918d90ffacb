"""A virtual LAN of Linux network namespaces: hosts, a bridge, and a packet capture.

The tests (tests/netns) and the shaped-LAN benchmarks (benchmarks/lan) both build on it.

Everything lives in namespaces the LAN creates itself: the root namespace gains no link, no
address and no route, hosts get no default route, and nothing forwards or NATs. Traffic
therefore cannot leave the machine.

    with VirtualLan(["hub", "w1"]) as lan:
        server = lan.popen("hub", [sys.executable, "server.py", lan.address("hub")])
        with lan.capture("hub") as cap:
            lan.run("w1", [sys.executable, "client.py", lan.address("hub")], check=True)
        assert secret not in cap.tcp_payload(port=5555)

Needs root and iproute2 (`ip netns`); call `netns_available()` to skip otherwise.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Iterator

log = logging.getLogger(__name__)

IP = shutil.which("ip") or "/usr/sbin/ip"
TC = shutil.which("tc") or "/usr/sbin/tc"
INTERFACE = "eth0"  # the name of every host's link, inside its own namespace
CMD_TIMEOUT_S = 10.0
# Our default names are cs<creator pid>-<creator start time, hex ticks>-<random>{-host|.switch};
# the start time tells a live creator from a reused pid.
_OURS = re.compile(r"^cs(\d+)-([0-9a-f]+)-[0-9a-f]{4}[-.]")
_HOST_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,39}$")
_ETH_P_ALL = 0x0003
_PACKET_OUTGOING = 4  # sll_pkttype of a frame this host sent


class NetlabError(RuntimeError):
    """An `ip` command failed, or a namespace helper did not start."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([IP, *args], capture_output=True, text=True, timeout=CMD_TIMEOUT_S)
    if check and proc.returncode != 0:
        raise NetlabError(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks after boot; None when gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def default_prefix() -> str:
    """A fresh namespace prefix that names this process, so `cleanup_stale` can judge it."""
    pid = os.getpid()
    return f"cs{pid}-{_start_ticks(pid) or 0:x}-{random.randrange(1 << 16):04x}"


def list_namespaces() -> list[str]:
    """Names of all named network namespaces (`ip netns list`)."""
    out = _ip("netns", "list").stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _kill_namespace_processes(ns: str) -> list[int]:
    pids = [int(p) for p in _ip("netns", "pids", ns, check=False).stdout.split() if p.isdigit()]
    for pid in pids:
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return pids


def _delete_namespace(ns: str) -> bool:
    _kill_namespace_processes(ns)
    proc = _ip("netns", "del", ns, check=False)
    if proc.returncode != 0:
        log.warning("could not delete namespace %s: %s", ns, proc.stderr.strip())
    return proc.returncode == 0


def cleanup_stale() -> list[str]:
    """Delete namespaces with our default naming whose creating process is gone; return them."""
    removed = []
    for ns in list_namespaces():
        m = _OURS.match(ns)
        if m and _start_ticks(int(m.group(1))) != int(m.group(2), 16):
            log.info("removing stale namespace %s", ns)
            if _delete_namespace(ns):
                removed.append(ns)
    return removed


@functools.cache
def netns_available() -> bool:
    """True when we are root on Linux and can create a namespace holding a bridge.

    With COMPUTESHARE_REQUIRE_NETNS=1 (CI's root pass) a machine without them is an error,
    so that pass can never succeed by skipping everything.
    """
    if _netns_usable():
        return True
    if os.environ.get("COMPUTESHARE_REQUIRE_NETNS") == "1":
        raise NetlabError("COMPUTESHARE_REQUIRE_NETNS=1, but network namespaces with a bridge "
                          "cannot be made here (root on Linux and iproute2 are needed)")
    return False


def _netns_usable() -> bool:
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or not os.path.exists(IP):
        return False
    probe = default_prefix() + ".probe"
    try:
        _ip("netns", "add", probe)
    except (NetlabError, OSError, subprocess.TimeoutExpired) as exc:
        log.info("network namespaces unavailable: %s", exc)
        return False
    try:
        _ip("-n", probe, "link", "add", "br0", "type", "bridge")
        return True
    except (NetlabError, OSError, subprocess.TimeoutExpired) as exc:
        log.info("bridges unavailable in a namespace: %s", exc)
        return False
    finally:
        _delete_namespace(probe)


@dataclass(frozen=True, slots=True)
class Host:
    """One machine of the LAN: its namespace, its IPv4 address and the bridge port it uses."""

    name: str
    namespace: str
    address: str
    port: str  # the veth end inside the switch namespace


class VirtualLan:
    """A bridge in its own namespace ("switch") and one namespace per host, joined by veths.

    Hosts get consecutive addresses on 10.213.<random>.0/24, `lo` up, and a route for
    224.0.0.0/4 on their link (so multicast such as mDNS works without choosing an interface).
    IPv6 is off unless `ipv6=True`, which keeps captures free of router/neighbour chatter.
    """

    def __init__(self, hosts: list[str], *, prefix: str | None = None,
                 ipv6: bool = False) -> None:
        if not hosts or len(set(hosts)) != len(hosts) or len(hosts) > 250:
            raise ValueError(f"need 1..250 distinct host names, got {hosts!r}")
        bad = [h for h in hosts if not _HOST_NAME.match(h)]
        if bad:
            raise ValueError(f"host names must match {_HOST_NAME.pattern}: {bad!r}")
        self.prefix = prefix or default_prefix()
        self.ipv6 = ipv6
        self.subnet_base = f"10.213.{random.randrange(256)}"
        self.subnet = f"{self.subnet_base}.0/24"
        self.switch_namespace = f"{self.prefix}.switch"
        self.hosts = {name: Host(name, f"{self.prefix}-{name}", f"{self.subnet_base}.{i + 1}",
                                 f"p{i}") for i, name in enumerate(hosts)}
        self._created: list[str] = []
        self._procs: list[subprocess.Popen[Any]] = []
        self._captures: list[Capture] = []
        self._tmpdir: str | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> VirtualLan:
        cleanup_stale()
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            self.close()
        except NetlabError:
            if exc_type is None:
                raise
            log.exception("cleanup failed while the test body was failing")  # keep its error

    @property
    def namespaces(self) -> list[str]:
        """Every namespace this LAN owns (the switch first)."""
        return [self.switch_namespace] + [h.namespace for h in self.hosts.values()]

    def _build(self) -> None:
        self._tmpdir = tempfile.mkdtemp(prefix="netlab-")
        sw = self.switch_namespace
        self._add_namespace(sw)
        _ip("-n", sw, "link", "add", "br0", "type", "bridge", "stp_state", "0",
            "forward_delay", "0", "mcast_snooping", "0")
        for host in self.hosts.values():
            self._add_host(host)
        _ip("-n", sw, "link", "set", "br0", "up")

    def _add_namespace(self, ns: str) -> None:
        _ip("netns", "add", ns)
        self._created.append(ns)
        if not self.ipv6:
            # Set before links exist so "default" covers the veths created later.
            subprocess.run([IP, "netns", "exec", ns, "sysctl", "-q", "-e", "-w",
                            "net.ipv6.conf.all.disable_ipv6=1",
                            "net.ipv6.conf.default.disable_ipv6=1"],
                           capture_output=True, timeout=CMD_TIMEOUT_S, check=False)
        _ip("-n", ns, "link", "set", "lo", "up")

    def _add_host(self, host: Host) -> None:
        ns, sw = host.namespace, self.switch_namespace
        self._add_namespace(ns)
        # Created inside the switch namespace, the pair never appears in the root namespace.
        _ip("-n", sw, "link", "add", host.port, "type", "veth",
            "peer", "name", INTERFACE, "netns", ns)
        _ip("-n", sw, "link", "set", host.port, "master", "br0", "up")
        _ip("-n", ns, "addr", "add", f"{host.address}/24", "brd", "+", "dev", INTERFACE)
        _ip("-n", ns, "link", "set", INTERFACE, "multicast", "on", "up")
        _ip("-n", ns, "route", "add", "224.0.0.0/4", "dev", INTERFACE)

    def close(self) -> None:
        """Stop captures, kill what runs inside, delete every namespace; safe to call twice."""
        for cap in self._captures:
            cap.stop()
        for ns in self._created:
            _kill_namespace_processes(ns)
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log.warning("process %s outlived its namespace", proc.pid)
        failed = [ns for ns in reversed(self._created) if not _delete_namespace(ns)]
        self._created, self._procs, self._captures = [], [], []
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
        if failed:
            raise NetlabError(f"could not delete namespaces {failed}")

    # -- hosts -----------------------------------------------------------------------------

    def _host(self, name: str) -> Host:
        try:
            return self.hosts[name]
        except KeyError:
            raise KeyError(f"no host {name!r} on this LAN (hosts: {list(self.hosts)})") from None

    def address(self, host: str) -> str:
        """The host's IPv4 address."""
        return self._host(host).address

    def interface(self, host: str) -> str:
        """The name of the host's link inside its namespace."""
        self._host(host)
        return INTERFACE

    def namespace(self, host: str) -> str:
        """The host's namespace name (for `ip -n NS ...`)."""
        return self._host(host).namespace

    def command(self, host: str, argv: list[str]) -> list[str]:
        """`argv` wrapped to run inside the host's namespace."""
        return [IP, "netns", "exec", self._host(host).namespace, *argv]

    def popen(self, host: str, argv: list[str], **kw: Any) -> subprocess.Popen[Any]:
        """Start `argv` inside the host (env passes through); it is killed and reaped on close."""
        proc = subprocess.Popen(self.command(host, argv), **kw)
        self._procs.append(proc)
        return proc

    def run(self, host: str, argv: list[str], **kw: Any) -> subprocess.CompletedProcess[Any]:
        """`subprocess.run` inside the host; `timeout` defaults to 30 s."""
        kw.setdefault("timeout", 30)
        return subprocess.run(self.command(host, argv), **kw)

    def shape(self, rate: str | None, hosts: list[str] | None = None) -> None:
        """Limit each host's link to ``rate`` (``"100mbit"``; None: unshaped), both ways.

        htb on the host's own veth end (its upload) and on the bridge's end (its download):
        ``netem`` and ``tbf`` are not in every kernel, ``htb`` is.
        """
        for name in hosts or list(self.hosts):
            host = self._host(name)
            for ns, dev in ((host.namespace, INTERFACE), (self.switch_namespace, host.port)):
                subprocess.run([TC, "-n", ns, "qdisc", "del", "dev", dev, "root"],
                               capture_output=True, timeout=CMD_TIMEOUT_S, check=False)
                if rate is None:
                    continue
                for args in (["qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
                              "default", "10", "r2q", "100"],
                             ["class", "add", "dev", dev, "parent", "1:", "classid", "1:10",
                              "htb", "rate", rate, "ceil", rate]):
                    proc = subprocess.run([TC, "-n", ns, *args], capture_output=True,
                                          text=True, timeout=CMD_TIMEOUT_S)
                    if proc.returncode != 0:
                        raise NetlabError(f"tc {' '.join(args)}: {proc.stderr.strip()}")

    def set_link(self, host: str, up: bool) -> None:
        """Pull the host's cable (``up=False``) or plug it back in, routes included.

        Taking a link down makes the kernel drop its routes; bringing it up restores the
        subnet's route from the address, and this puts the multicast route back.
        """
        ns = self._host(host).namespace
        _ip("-n", ns, "link", "set", INTERFACE, "up" if up else "down")
        if up:
            _ip("-n", ns, "route", "replace", "224.0.0.0/4", "dev", INTERFACE)

    def tx_bytes(self, host: str) -> int:
        """Bytes the host has sent on its link so far (headers included)."""
        proc = subprocess.run(self.command(host, ["cat", f"/sys/class/net/{INTERFACE}/"
                                                         "statistics/tx_bytes"]),
                              capture_output=True, text=True, timeout=CMD_TIMEOUT_S, check=True)
        return int(proc.stdout.strip())

    def capture(self, host: str, *, start_timeout_s: float = 10.0) -> Capture:
        """Start recording every frame on the host's link, both directions; returns once live."""
        assert self._tmpdir, "capture() needs an entered VirtualLan"
        fd, path = tempfile.mkstemp(prefix=f"{host}-", suffix=".frames", dir=self._tmpdir)
        os.close(fd)
        proc = self.popen(host, [sys.executable, "-I", "-c", _CAPTURE_HELPER, INTERFACE, path],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        cap = Capture(host, path, proc)
        self._captures.append(cap)
        cap._wait_ready(start_timeout_s)
        return cap


# Runs inside the namespace. A socket created with protocol 0 receives nothing until bind(),
# so no frame from another interface slips in first. Each record: length, pkttype, frame.
_CAPTURE_HELPER = r"""
import os, select, socket, struct, sys
iface, path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
s.setsockopt(socket.SOL_SOCKET, 33, 1 << 23)  # SO_RCVBUFFORCE
s.bind((iface, 0x0003))
def take(out):
    data, addr = s.recvfrom(1 << 18)
    out.write(struct.pack("!IB", len(data), addr[2]) + data)
with open(path, "wb", buffering=0) as out:
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([s, 0], [], [])
        if s in ready:
            take(out)
        if 0 in ready and not os.read(0, 4096):
            s.setblocking(False)
            try:
                while True:
                    take(out)
            except BlockingIOError:
                pass
            break
packets, drops = struct.unpack("II", s.getsockopt(263, 6, 8))  # PACKET_STATISTICS
print("drops", drops, flush=True)
"""


@dataclass(frozen=True, slots=True)
class Frame:
    """One captured Ethernet frame; `outgoing` when the captured host sent it."""

    data: bytes
    outgoing: bool


class Capture:
    """Frames seen on one host's link, recorded by a helper process inside its namespace."""

    def __init__(self, host: str, path: str, proc: subprocess.Popen[bytes]) -> None:
        self.host, self.path, self._proc = host, path, proc
        self.drops: int | None = None  # frames the kernel dropped, known after stop()
        self._final: list[Frame] | None = None

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _wait_ready(self, timeout_s: float) -> None:
        assert self._proc.stdout is not None
        if select.select([self._proc.stdout], [], [], timeout_s)[0]:
            if self._proc.stdout.readline().strip() == b"ready":
                return
        self._proc.kill()
        _, err = self._proc.communicate(timeout=5)
        raise NetlabError(f"capture on {self.host} did not start: {err.decode(errors='replace')}")

    def stop(self, timeout_s: float = 5.0) -> list[bytes]:
        """Stop recording (idempotent) and return every frame, in capture order."""
        if self._final is None:
            try:
                out, _ = self._proc.communicate(timeout=timeout_s)  # closes stdin: helper drains
                m = re.search(rb"drops (\d+)", out)
                self.drops = int(m.group(1)) if m else None
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.communicate(timeout=5)
            self._final = self.records()
        return [f.data for f in self._final]

    def records(self) -> list[Frame]:
        """Frames recorded so far (works while the capture runs)."""
        if self._final is not None:
            return list(self._final)
        frames, pos = [], 0
        with open(self.path, "rb") as fh:
            blob = fh.read()
        while pos + 5 <= len(blob):
            size, pkttype = struct.unpack_from("!IB", blob, pos)
            if pos + 5 + size > len(blob):
                break  # the helper is mid-write
            frames.append(Frame(blob[pos + 5:pos + 5 + size], pkttype == _PACKET_OUTGOING))
            pos += 5 + size
        return frames

    def frames(self) -> list[bytes]:
        """Raw Ethernet frames recorded so far."""
        return [f.data for f in self.records()]

    def tcp_payload(self, port: int | None = None, *, outgoing: bool | None = None) -> bytes:
        """TCP payloads concatenated in capture order (retransmissions included).

        Args:
            port: keep segments whose source or destination port is this.
            outgoing: True/False keeps only frames the host sent/received.
        """
        return b"".join(self._payloads(6, port, outgoing))

    def udp_payload(self, port: int | None = None, *, outgoing: bool | None = None) -> bytes:
        """UDP payloads concatenated in capture order; arguments as for `tcp_payload`."""
        return b"".join(self._payloads(17, port, outgoing))

    def _payloads(self, proto: int, port: int | None, outgoing: bool | None) -> Iterator[bytes]:
        for frame in self.records():
            if outgoing is not None and frame.outgoing != outgoing:
                continue
            parsed = _transport_payload(frame.data, proto)
            if parsed and (port is None or port in parsed[:2]):
                yield parsed[2]


def _transport_payload(frame: bytes, proto: int) -> tuple[int, int, bytes] | None:
    """(source port, destination port, payload) of an unfragmented IPv4 TCP/UDP frame."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[14] >> 4 != 4:
        return None
    ihl = (frame[14] & 0x0F) * 4
    total, frag, ip_proto = struct.unpack_from("!H2xHxB", frame, 16)
    if ip_proto != proto or frag & 0x1FFF:
        return None
    # A GSO super-frame may carry total length 0; the frame end is the packet end then.
    seg = frame[14 + ihl:14 + total] if total else frame[14 + ihl:]
    if len(seg) < (20 if proto == 6 else 8):
        return None
    sport, dport = struct.unpack_from("!HH", seg)
    if proto == 6:
        return sport, dport, seg[(seg[12] >> 4) * 4:]
    ulen = struct.unpack_from("!H", seg, 4)[0]
    return sport, dport, seg[8:ulen] if ulen >= 8 else seg[8:]
