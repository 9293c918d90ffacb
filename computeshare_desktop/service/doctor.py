"""``computeshare doctor`` and the app's "Check network…": what stands between this machine
and a session, each failure with its likely cause and its fix.

The checks: this machine's interfaces and addresses; whether mDNS works here (a throwaway
advert seen by this machine) and others' sessions arrive; whether the hub's ports can be
bound and reached on the LAN address; and, with a hub (``--hub HOST:PORT`` or a session
picked in the app), its round trip and bandwidth over the real encrypted channel
(transport/probe.py, allowed before pairing) and the preset ``auto`` would pick on that link.
``diagnose`` takes a ``Network`` (the side effects), so tests hand it a fake.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import socket
import threading
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import ifaddr

from ..addresses import parse_address
from ..defaults import DEFAULT_PORT
from ..discovery import DiscoveredSession, DiscoveryError, discover
from ..discovery.hub_advert import resolve_interface
from ..discovery.selfcheck import own_advert_seen
from ..errors import HubUnreachableError
from ..hub.presets import PRESETS, choose, wire_fraction
from ..protocol.ports import HubPorts
from ..reach import probe_hub
from ..transport.probe import LinkMeasure, ProbeFailed, measure_link
from .doctor_checks import (Address, PortCheck, interfaces_item, kind_of, lan_address,
                            link_item, mdns_self_item, ports_item, reach_item, sessions_item)
from .doctor_report import Item, Report, Status

log = logging.getLogger(__name__)

REACH_TIMEOUT_S = 1.5


@dataclass(frozen=True, slots=True)
class DoctorOptions:
    """What to check: a hub to measure (HOST[:PORT]), the ports a hub here would use, the
    interfaces to look on (None: all), how long to listen for adverts, and the compute time
    of a step that the preset estimate assumes."""

    hub: str | None = None
    port: int = DEFAULT_PORT
    interfaces: tuple[str, ...] | None = None
    mdns_wait_s: float = 3.0
    step_ms: float = 100.0


class Network(Protocol):
    """The doctor's side effects (LiveNetwork; a fake in tests)."""

    def addresses(self) -> list[Address]: ...

    def route_to(self, host: str) -> str | None: ...

    def own_advert(self, address: str, wait_s: float) -> float | None: ...

    def sessions(self, interfaces: Sequence[str] | None, wait_s: float
                 ) -> list[DiscoveredSession]: ...

    def ports(self, port: int, address: str) -> PortCheck: ...

    def reach_hub(self, host: str, port: int) -> str: ...

    def measure(self, host: str, port: int) -> LinkMeasure: ...


def diagnose(options: DoctorOptions, network: Network | None = None,
             on_item: Callable[[Item], None] | None = None) -> Report:
    """Run every check and return the report (blocks about ``mdns_wait_s`` plus a second).

    Raises:
        ConfigError: ``options.hub`` is not an address.
    """
    net = network or LiveNetwork()
    hub = parse_address(options.hub) if options.hub else None
    found: list[DiscoveredSession] = []
    browse = threading.Thread(target=lambda: found.extend(_browse(net, options)),
                              name="doctor-browse", daemon=True)
    browse.start()
    items: list[Item] = []

    def add(item: Item) -> None:
        items.append(item)
        if on_item is not None:
            on_item(item)

    addresses = net.addresses()
    route = net.route_to(hub[0]) if hub else None  # where traffic to the hub leaves from
    preferred = _preferred(options) or route
    chosen = lan_address(addresses, preferred)
    add(wrong_interface(interfaces_item(addresses, chosen), addresses, chosen, route))
    add(_own_advert(net, chosen, options.mdns_wait_s))
    add(ports_item(net.ports(options.port, chosen.ip), chosen.ip) if chosen else
        ports_item(PortCheck(options.port), None))
    measured = _hub_items(net, hub, addresses, route, options, add)
    browse.join(options.mdns_wait_s + 10)
    add(sessions_item(found, options.mdns_wait_s, hub, _reached(items),
                      measured.session_id if measured else None))
    return Report(tuple(_ordered(items)))


def _reached(items: list[Item]) -> bool:
    reach = next((i for i in items if i.key == "hub"), None)
    return reach is not None and reach.status is Status.OK


def _ordered(items: list[Item]) -> list[Item]:
    order = ["interfaces", "mdns_self", "mdns_sessions", "ports", "hub", "link", "preset"]
    return sorted(items, key=lambda i: order.index(i.key) if i.key in order else len(order))


def _browse(net: Network, options: DoctorOptions) -> list[DiscoveredSession]:
    try:
        return net.sessions(options.interfaces, options.mdns_wait_s)
    except Exception as exc:  # reported by the mDNS item; the other checks go on
        log.info("no mDNS browse: %r", exc)
        return []


def _preferred(options: DoctorOptions) -> str | None:
    """The address ``--interface`` names, if any."""
    if not options.interfaces:
        return None
    try:
        return resolve_interface(options.interfaces[0])
    except DiscoveryError:
        return options.interfaces[0]


def wrong_interface(item: Item, addresses: Sequence[Address], chosen: Address | None,
                    route: str | None) -> Item:
    """``item``, or a warning when the hub is reached from another interface than the one
    sessions are looked for and announced on (``--interface`` names the wrong one)."""
    if item.status is Status.FAIL or chosen is None or route is None or route == chosen.ip:
        return item
    other = next((a for a in addresses if a.ip == route), None)
    if other is None or other.kind == "loopback":
        return item
    return dataclasses.replace(
        item, status=Status.WARN,
        cause=f"the hub is reached through {other.interface} ({other.ip}), but sessions are "
              f"looked for on {chosen.interface} ({chosen.ip}): the wrong interface",
        fix=f"use --interface {other.interface} (the Settings of the app too), or leave it "
            "out")


def _own_advert(net: Network, chosen: Address | None, wait_s: float) -> Item:
    if chosen is None:
        return mdns_self_item(None, None)
    try:
        return mdns_self_item(chosen.ip, net.own_advert(chosen.ip, wait_s))
    except Exception as exc:  # mDNS unavailable (DiscoveryError) or refused by the system
        return mdns_self_item(chosen.ip, None, str(exc) or repr(exc))


def _hub_items(net: Network, hub: tuple[str, int] | None, addresses: Sequence[Address],
               route_ip: str | None, options: DoctorOptions,
               add: Callable[[Item], None]) -> LinkMeasure | None:
    """The hub's items (reach, link, preset); the measure when the link was measured."""
    if hub is None:
        return None
    host, port = hub
    route = next((a for a in addresses if a.ip == route_ip), None)
    reach = reach_item(host, port, net.reach_hub(host, port), route)
    add(reach)
    if reach.status is Status.FAIL:
        return None
    try:
        measure: LinkMeasure | None = net.measure(host, port)
    except ProbeFailed as exc:
        add(link_item(host, port, None, exc))
        return None
    except Exception as exc:  # the report must come out whatever the link did
        add(link_item(host, port, None, ProbeFailed("encrypted", f"the check failed: {exc!r}")))
        return None
    assert measure is not None
    add(link_item(host, port, measure, None))
    add(preset_item(measure, options.step_ms))
    return measure


def preset_item(measure: LinkMeasure, step_ms: float) -> Item:
    """The preset ``auto`` would pick on this link for the session's model, assuming a
    step's compute takes ``step_ms`` (auto measures it in the first rounds)."""
    lossless = wire_fraction(PRESETS["lan"].mode)
    nbytes = measure.numel * 4 * lossless
    rate = max(min(measure.down_bps, measure.up_bps), 1.0)
    other = 2 * measure.rtt_s + 2 * nbytes / rate
    preset = choose(compute_s=step_ms / 1000, other_s=other)
    steps = (f", {preset.mode.local_steps} local steps" if preset.mode.local_steps else "")
    return Item("preset", "Preset on this link", Status.OK,
                f"{preset.label} ({preset.mode.codec}{steps}) for this session's model "
                f"({measure.numel:,} parameters) at {step_ms:.0f} ms of compute per step; "
                "auto measures the real step in the first rounds",
                facts={"preset": preset.name, "codec": preset.mode.codec,
                       "local_steps": preset.mode.local_steps, "round_other_s": round(other, 4),
                       "step_ms": step_ms})


class LiveNetwork:
    """The real network of this machine."""

    def addresses(self) -> list[Address]:
        found = []
        for adapter in ifaddr.get_adapters():
            for ip in adapter.ips:
                if isinstance(ip.ip, str):
                    found.append(Address(adapter.nice_name, ip.ip, ip.network_prefix,
                                         kind_of(adapter.nice_name, ip.ip)))
        return found

    def route_to(self, host: str) -> str | None:
        """This machine's address that traffic to ``host`` leaves from (no packet sent)."""
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((host, 9))
                return str(s.getsockname()[0])
        except OSError:
            return None

    def own_advert(self, address: str, wait_s: float) -> float | None:
        return own_advert_seen(address, wait_s)

    def sessions(self, interfaces: Sequence[str] | None, wait_s: float
                 ) -> list[DiscoveredSession]:
        return discover(wait_s, interfaces=interfaces)

    def ports(self, port: int, address: str) -> PortCheck:
        """Listen on the hub's ports (every address, as a hub does) and connect to each
        through ``address``; one that is in use is tested as it is."""
        listeners, in_use = [], False
        try:
            for p in range(port, port + HubPorts.COUNT):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                listeners.append(sock)
                try:
                    sock.bind(("0.0.0.0", p))
                    sock.listen(4)
                except OSError as exc:
                    if exc.errno != errno.EADDRINUSE:
                        return PortCheck(port, bind_error=exc.strerror or str(exc))
                    in_use = True
            blocked = tuple((p, why) for p in range(port, port + HubPorts.COUNT)
                            if (why := _connect(address, p)))
            return PortCheck(port, in_use=in_use, unreachable=blocked)
        finally:
            for sock in listeners:
                sock.close()

    def reach_hub(self, host: str, port: int) -> str:
        try:
            probe_hub(host, port)
        except HubUnreachableError as exc:
            return str(exc)
        return ""

    def measure(self, host: str, port: int) -> LinkMeasure:
        return measure_link(host, port)


def _connect(address: str, port: int) -> str:
    """"" when a TCP connection to ``address:port`` opens, else why not."""
    try:
        with socket.create_connection((address, port), timeout=REACH_TIMEOUT_S):
            return ""
    except ConnectionRefusedError:
        return "refused"
    except TimeoutError:
        return "timeout"
    except OSError as exc:
        return exc.strerror or str(exc)
