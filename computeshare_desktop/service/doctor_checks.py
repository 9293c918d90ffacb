"""The network check's judgements: what was measured in, one report item out, with the
likely cause and the fix of anything that failed. Pure (the doctor measures, see doctor.py)."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Sequence

from ..discovery import DiscoveredSession
from ..protocol.ports import HubPorts
from ..transport.probe import LinkMeasure, ProbeFailed
from .doctor_report import Item, Status, mbit

VPN_NAMES = re.compile(r"^(tun|tap|wg|utun|ppp|ipsec|tailscale|zt|nordlynx|proton|cscotun|gpd)",
                       re.IGNORECASE)
CONTAINER_NAMES = re.compile(r"^(docker|br-|veth|virbr|cni|podman|lxc|lxd|vmnet|vboxnet)",
                             re.IGNORECASE)
CONTAINER_NETS = tuple(ipaddress.IPv4Network(n) for n in ("172.17.0.0/16", "10.88.0.0/16"))
MDNS_FIX = ("allow mDNS (UDP port 5353 to 224.0.0.251) in the firewall of this machine and of "
            "the hub's; on Wi-Fi, turn off the router's client (AP) isolation; disconnect a VPN "
            "that takes all traffic. Until then, join by address: computeshare join HOST:PORT")


@dataclass(frozen=True, slots=True)
class Address:
    """One IPv4 address of one interface, and what kind of network it is on."""

    interface: str
    ip: str
    prefix: int
    kind: str  # lan, vpn, container, loopback, link-local

    def text(self) -> str:
        return f"{self.interface} {self.ip}/{self.prefix}" + (
            "" if self.kind == "lan" else f" ({self.kind})")


def kind_of(interface: str, ip: str) -> str:
    """What kind of network an address is on, from its interface's name and its range."""
    parsed = ipaddress.IPv4Address(ip)
    if parsed.is_loopback:
        return "loopback"
    if parsed.is_link_local:
        return "link-local"
    if VPN_NAMES.match(interface):
        return "vpn"
    if CONTAINER_NAMES.match(interface) or any(parsed in n for n in CONTAINER_NETS):
        return "container"
    return "lan"


def lan_address(addresses: Sequence[Address], preferred: str | None = None) -> Address | None:
    """The address sessions would use: ``preferred`` (the route to the hub, or the one the
    user chose) when it is one of ours, else the first LAN address."""
    for address in addresses:
        if address.ip == preferred:
            return address
    return next((a for a in addresses if a.kind == "lan"), None)


def interfaces_item(addresses: Sequence[Address], chosen: Address | None) -> Item:
    listed = ", ".join(a.text() for a in addresses if a.kind != "loopback") or "none"
    facts = {"addresses": [{"interface": a.interface, "ip": a.ip, "prefix": a.prefix,
                            "kind": a.kind} for a in addresses],
             "lan_address": chosen.ip if chosen else None}
    title = "Network interfaces"
    if chosen is None:
        return Item("interfaces", title, Status.FAIL, listed,
                    "this machine has no address on a local network (only loopback, a VPN or "
                    "container bridges)", "connect to the same Wi-Fi or wired network as the "
                    "other machines", facts)
    detail = f"{listed}; sessions use {chosen.ip} ({chosen.interface})"
    vpns = sorted({a.interface for a in addresses if a.kind == "vpn"})
    if chosen.kind == "vpn":
        return Item("interfaces", title, Status.FAIL, detail, f"traffic goes through the VPN "
                    f"{chosen.interface}, not the LAN", "disconnect the VPN (or allow local "
                    "network access in its settings), or pick the LAN with --interface", facts)
    if vpns:
        return Item("interfaces", title, Status.WARN, detail, f"a VPN is connected "
                    f"({', '.join(vpns)}): it can swallow multicast or route the hub's "
                    "address elsewhere", "if sessions are not found or the hub does not "
                    "answer, disconnect the VPN or allow local network access in it", facts)
    lans = sorted({a.interface for a in addresses if a.kind == "lan"})
    if len(lans) > 1:
        return Item("interfaces", title, Status.WARN, detail, f"several networks "
                    f"({', '.join(lans)}): another machine may be on a different one",
                    "if the others do not see this machine, choose the shared one with "
                    "--interface IF (the Settings of the app too)", facts)
    return Item("interfaces", title, Status.OK, detail, facts=facts)


def mdns_self_item(address: str | None, seconds: float | None, error: str = "") -> Item:
    title = "mDNS on this machine"
    if address is None:
        return Item("mdns_self", title, Status.SKIP, "no LAN address to advertise on")
    if error or seconds is None:
        return Item("mdns_self", title, Status.FAIL,
                    error or f"a test advert on {address} was not seen by this machine itself",
                    "multicast does not work here: a firewall on this machine drops mDNS "
                    "(UDP 5353), or the interface has multicast turned off", MDNS_FIX)
    return Item("mdns_self", title, Status.OK, f"a test advert on {address} was seen in "
                f"{seconds:.1f} s", facts={"seconds": round(seconds, 3)})


def hub_session(sessions: Sequence[DiscoveredSession], host: str, port: int,
                session_id: str | None) -> DiscoveredSession | None:
    """The advert of the hub at ``host:port`` among ``sessions`` (by id when known)."""
    for s in sessions:
        if s.advert.session_id == session_id or (host in s.addresses and s.advert.port == port):
            return s
    return None


def sessions_item(sessions: Sequence[DiscoveredSession], wait_s: float,
                  hub: tuple[str, int] | None, hub_answers: bool,
                  session_id: str | None) -> Item:
    """Others' sessions seen over mDNS; with a hub that answers by address, whether its
    advert arrived too (when it did not, multicast is blocked between the two)."""
    title = "Sessions on the LAN"
    names = "; ".join(f"{s.name} at {s.addresses[0]}:{s.advert.port}" for s in sessions)
    facts = {"sessions": [{"name": s.name, "address": s.addresses[0], "port": s.advert.port,
                           "session_id": s.advert.session_id} for s in sessions]}
    if hub is not None and hub_answers and hub_session(sessions, *hub, session_id) is None:
        return Item("mdns_sessions", title, Status.FAIL,
                    f"the hub at {hub[0]}:{hub[1]} answers, but its advert never arrived "
                    f"here in {wait_s:.0f} s" + (f" (seen: {names})" if names else ""),
                    "multicast is blocked between this machine and the hub (a firewall, Wi-Fi "
                    "client isolation, a VPN, or a switch that filters multicast)", MDNS_FIX,
                    facts)
    if not sessions:
        return Item("mdns_sessions", title, Status.WARN, f"none seen in {wait_s:.0f} s",
                    "no session is running, or multicast is blocked between the machines",
                    "start a session on another machine and check again; " + MDNS_FIX, facts)
    return Item("mdns_sessions", title, Status.OK, names, facts=facts)


@dataclass(frozen=True, slots=True)
class PortCheck:
    """Binding the hub's ports here and connecting to them through the LAN address."""

    port: int
    in_use: bool = False  # something (a hub?) already listens there
    bind_error: str = ""  # another reason binding failed
    unreachable: tuple[tuple[int, str], ...] = ()  # (port, "timeout" | "refused" | text)


def firewall_fix(port: int, where: str = "this machine") -> str:
    ports = HubPorts.at(port)
    return (f"allow incoming TCP {ports.request}-{ports.pairing} on {where}: Linux "
            f"`sudo ufw allow {ports.request}:{ports.pairing}/tcp` (or firewalld, nftables); "
            "Windows: allow ComputeShare when the firewall asks, or add an inbound rule; "
            "macOS: System Settings > Network > Firewall")


def ports_item(check: PortCheck, address: str | None) -> Item:
    ports = HubPorts.at(check.port)
    span = f"{ports.request}-{ports.pairing}"
    title = "Hub ports here"
    if address is None:
        return Item("ports", title, Status.SKIP, "no LAN address to test them on")
    if check.bind_error:
        return Item("ports", title, Status.FAIL, f"cannot listen on {span}: {check.bind_error}",
                    "the system refuses these ports", "choose others with --port", {})
    if check.unreachable:
        blocked = ", ".join(f"{p} ({why})" for p, why in check.unreachable)
        return Item("ports", title, Status.FAIL, f"listening on {span}, but {address} does not "
                    f"let in {blocked}", "a firewall on this machine blocks the hub's ports",
                    firewall_fix(check.port), {"blocked": [p for p, _ in check.unreachable]})
    busy = " (already in use: a hub runs here?)" if check.in_use else ""
    return Item("ports", title, Status.WARN if check.in_use else Status.OK,
                f"{span} can be bound and reached on {address}{busy}",
                "another program listens there" if check.in_use else "",
                "a hub here would need --port with three free ports" if check.in_use else "")


def reach_item(host: str, port: int, error: str, route: Address | None) -> Item:
    """The first look at ``--hub``: does a hub answer on its request port?"""
    title = f"Hub {host}:{port}"
    via = f" (via {route.interface} {route.ip})" if route else ""
    if not error:
        return Item("hub", title, Status.OK, f"a ComputeShare hub answers{via}")
    if route is not None and route.kind == "vpn":
        cause, fix = (f"the route to {host} goes through the VPN {route.interface}",
                      "disconnect the VPN or allow local network access in it")
    elif "refused" in error:
        cause, fix = ("nothing listens there, or a firewall rejects it",
                      f"check that the hub runs and its port is {port}; " +
                      firewall_fix(port, "the hub"))
    elif "does not answer" in error:
        cause, fix = ("a firewall on the hub drops the port, or the address is on another "
                      "network", firewall_fix(port, "the hub") + "; check that both machines "
                      "are on the same network")
    elif "not a ComputeShare hub" in error:
        cause, fix = "another program listens on that port", "use the port the hub shows"
    else:
        cause, fix = "the address is wrong", "use the address the hub shows (host:port)"
    return Item("hub", title, Status.FAIL, error + via, cause, fix)


def link_item(host: str, port: int, measure: LinkMeasure | None,
              failure: ProbeFailed | None) -> Item:
    """The encrypted channel: round trip and bandwidth, or why they could not be measured."""
    title = "Encrypted link to the hub"
    if measure is not None:
        return Item("link", title, Status.OK,
                    f"round trip {measure.rtt_s * 1000:.1f} ms, down {mbit(measure.down_bps)}, "
                    f"up {mbit(measure.up_bps)}",
                    facts={"rtt_ms": round(measure.rtt_s * 1000, 3),
                           "down_bytes_per_s": round(measure.down_bps),
                           "up_bytes_per_s": round(measure.up_bps),
                           "session_id": measure.session_id, "parameters": measure.numel})
    assert failure is not None
    pair = HubPorts.at(port).pairing
    if failure.stage == "pairing":
        cause, fix = (f"port {port} answers but the pairing port {pair} does not: a firewall "
                      "lets only some of the hub's ports through", firewall_fix(port, "the hub"))
    elif failure.stage == "encrypted":
        cause, fix = ("the encrypted channel stalls: a firewall or VPN that drops large "
                      "packets, or a very slow link", "try a wired connection, disconnect a "
                      "VPN, or " + firewall_fix(port, "the hub"))
    elif failure.code == "BUSY":
        cause, fix = "another network check ran just now", "check again in a few seconds"
    elif failure.code in ("MALFORMED", "VERSION_MISMATCH"):
        cause, fix = ("the hub runs another ComputeShare version",
                      "install the same version on both machines")
    else:
        cause, fix = "the hub refused the check", "check again; update ComputeShare on both"
    return Item("link", title, Status.FAIL, str(failure), cause, fix)
