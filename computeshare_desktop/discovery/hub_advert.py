"""Keeps a running hub's mDNS advert in step with its session (joined workers, state)."""

from __future__ import annotations

import dataclasses
import logging
import socket
from typing import Sequence

import ifaddr

from ..data.folders import dataset_label
from ..events import Event, Finished, RoundClosed, StateChanged, WorkerJoined, WorkerLeft
from ..hub.endpoint import HubEndpoint
from ..models.specs import model_label
from ..protocol import PROTOCOL_VERSION
from ..protocol.ports import HubPorts
from .advert import SessionAdvert, key_fingerprint
from .advertiser import Advertiser
from .errors import DiscoveryError

log = logging.getLogger(__name__)


def resolve_interface(text: str) -> str:
    """An IPv4 address from an address or an interface name (``eth0``, ``en0``...)."""
    try:
        socket.inet_aton(text)
        return text
    except OSError:
        pass
    for adapter in ifaddr.get_adapters():
        if text in (adapter.name, adapter.nice_name):
            for ip in adapter.ips:
                if isinstance(ip.ip, str):
                    return ip.ip
    raise DiscoveryError(f"no network interface or IPv4 address called {text!r}")


class HubAdvertising:
    """Advertises one hub session while it runs; an event sink of the session."""

    def __init__(self, session: HubEndpoint, *, hub_key: str, port: int, name: str,
                 interfaces: Sequence[str] | None = None) -> None:
        status = session.status()
        c = status.config
        ports = HubPorts.at(port)
        self.session = session
        self.advert = SessionAdvert(
            session_id=status.session_id, name=name, host=socket.gethostname(),
            model=model_label(c.model), dataset=dataset_label(c.dataset), joined=status.joined,
            expected=c.workers, state=status.state, protocol=PROTOCOL_VERSION,
            key_fingerprint=key_fingerprint(hub_key), port=ports.request,
            pub_port=ports.events, pair_port=ports.pairing, round=status.version,
            rounds=c.rounds)
        self.advertiser = Advertiser(self.advert, interfaces=interfaces)

    def start(self) -> bool:
        """Publish (blocks ~2 s); False, with a warning, when mDNS is unavailable."""
        try:
            self.advertiser.start()
        except DiscoveryError as exc:
            log.warning("not advertising on the LAN: %s", exc)
            return False
        self.session.subscribe(self.on_event)
        return True

    def on_event(self, event: Event) -> None:
        """Update the advert when workers come and go or the state changes."""
        if not isinstance(event, (WorkerJoined, WorkerLeft, StateChanged, RoundClosed,
                                  Finished)):
            return
        status = self.session.status()
        self.advert = dataclasses.replace(self.advert, joined=status.joined,
                                          state=status.state, round=status.version)
        self.advertiser.update(self.advert)

    def close(self) -> None:
        """Withdraw the advert (goodbye packets)."""
        self.advertiser.close()
