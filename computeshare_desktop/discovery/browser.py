"""Find ComputeShare sessions on the LAN: a live view of mDNS adverts, and a one-shot scan.

python-zeroconf delivers Added/Updated/Removed events on its browser thread, where nothing
may block; this module only queues them there. One ``computeshare-browser`` thread resolves
services (blocking requests with short timeouts) and, every ``check_interval_s``, re-checks
each known session against the cache: python-zeroconf keeps a PTR record for at least 1125 s
whatever its TTL, so it never reports a hub that died without a goodbye. Our check uses the
short-lived SRV/TXT/A records instead, and removes a dead hub at most
``ttl + check_interval_s + probe_timeout_s`` after its last announcement (about 12 s with the
Advertiser's defaults, 10 + 1 + 1).
"""

from __future__ import annotations

import ipaddress
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

import ifaddr
from zeroconf import IPVersion, ServiceBrowser, ServiceInfo, ServiceStateChange, Zeroconf

from .advert import SERVICE_TYPE, SessionAdvert, from_txt
from .advertiser import open_zeroconf
from .errors import AdvertError

log = logging.getLogger(__name__)

MAX_NAMES = 256  # instance names tracked at once: a flood of adverts cannot grow memory
MAX_EVENTS = 1024
_STOP = object()


@dataclass(frozen=True, slots=True)
class DiscoveredSession:
    """A session seen on the LAN: its advert, the hub's IPv4 addresses and mDNS name."""

    advert: SessionAdvert
    addresses: tuple[str, ...]  # routable addresses first, loopback and link-local last
    instance: str  # full mDNS service name

    @property
    def address(self) -> str:
        """The hub's request endpoint, ``tcp://IP:PORT`` on its first IPv4 address."""
        return f"tcp://{self.addresses[0]}:{self.advert.port}"

    @property
    def name(self) -> str:
        """The human session name."""
        return self.advert.name


OnChange = Callable[[list[DiscoveredSession]], None]


class SessionBrowser:
    """Keeps a live dict of ComputeShare sessions on the LAN until ``close()``.

    ``on_change`` is called on the ``computeshare-browser`` thread with the new list
    whenever a session appears, changes or goes; keep it short and thread-safe.
    """

    def __init__(self, *, interfaces: Sequence[str] | None = None,
                 zeroconf: Zeroconf | None = None, on_change: OnChange | None = None,
                 resolve_timeout_s: float = 3.0, check_interval_s: float = 1.0,
                 probe_timeout_s: float = 1.0) -> None:
        self._interfaces = None if interfaces is None else list(interfaces)
        self._zc, self._owns_zc = zeroconf, zeroconf is None
        self._on_change = on_change
        self.resolve_timeout_s, self.check_interval_s = resolve_timeout_s, check_interval_s
        self.probe_timeout_s = probe_timeout_s
        self._events: queue.Queue[object] = queue.Queue(maxsize=MAX_EVENTS)
        self._lock = threading.Lock()
        self._sessions: dict[str, DiscoveredSession] = {}
        self._present: set[str] = set()  # names browsed and not yet removed (maybe dead)
        self._warned: set[str] = set()
        self._browser: ServiceBrowser | None = None
        self._thread: threading.Thread | None = None
        self._started = self._closed = False

    def start(self) -> SessionBrowser:
        """Start browsing (returns at once); returns self.

        Raises:
            DiscoveryError: mDNS is unavailable on this machine.
        """
        if self._started or self._closed:
            raise RuntimeError("SessionBrowser.start() may be called once, before close()")
        self._started = True
        if self._zc is None:
            self._zc = open_zeroconf(self._interfaces)
        self._thread = threading.Thread(target=self._run, name="computeshare-browser",
                                        daemon=True)
        self._thread.start()
        try:
            self._browser = ServiceBrowser(self._zc, SERVICE_TYPE, handlers=[self._on_event])
        except Exception:
            self.close()
            raise
        return self

    def sessions(self) -> list[DiscoveredSession]:
        """The sessions seen now, sorted by name then id."""
        with self._lock:
            found = list(self._sessions.values())
        return sorted(found, key=lambda s: (s.name.casefold(), s.advert.session_id))

    def close(self) -> None:
        """Stop browsing and join every thread this browser started; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._browser is not None:
            self._browser.cancel()
        if self._thread is not None:
            self._put_event(_STOP, block=True)
            self._thread.join()
        if self._owns_zc and self._zc is not None:
            self._zc.close()
            self._zc = None

    def __enter__(self) -> SessionBrowser:
        """Start browsing unless ``start()`` was already called."""
        return self if self._started else self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _on_event(self, zeroconf: Zeroconf, service_type: str, name: str,
                  state_change: ServiceStateChange) -> None:
        """On python-zeroconf's thread: never block, only queue."""
        self._put_event((state_change, name), block=False)

    def _put_event(self, item: object, *, block: bool) -> None:
        try:
            self._events.put(item, block=block, timeout=5.0 if block else None)
        except queue.Full:
            log.warning("mDNS event queue full: dropped an event (the next check catches up)")

    def _run(self) -> None:
        next_check = time.monotonic() + self.check_interval_s
        while True:
            try:
                item = self._events.get(timeout=max(0.0, next_check - time.monotonic()))
            except queue.Empty:
                item = None
            if item is _STOP or self._closed:  # _closed: even if _STOP found the queue full
                return
            try:
                if isinstance(item, tuple):
                    self._handle(*item)
                if time.monotonic() >= next_check:
                    self._check_all()
                    next_check = time.monotonic() + self.check_interval_s
            except Exception:  # the listener must outlive any one bad advert
                log.exception("error in the ComputeShare session browser (ignored)")

    def _handle(self, change: ServiceStateChange, name: str) -> None:
        if change is ServiceStateChange.Removed:
            self._present.discard(name)
            self._drop(name)
            return
        if name not in self._present and len(self._present) >= MAX_NAMES:
            self._warn_once(name, f"more than {MAX_NAMES} mDNS services; ignoring this one")
            return
        self._present.add(name)
        self._resolve(name, self.resolve_timeout_s)

    def _check_all(self) -> None:
        for name in list(self._present):
            if self._closed:
                return
            # Only a session we list gets a network probe; dead or hostile names cost nothing.
            live = name in self._sessions
            self._resolve(name, self.probe_timeout_s if live else 0.0)

    def _resolve(self, name: str, timeout_s: float) -> None:
        """Refresh one name from the cache, asking the network for up to ``timeout_s``."""
        info: ServiceInfo | None = None
        try:
            info = ServiceInfo(SERVICE_TYPE, name)
            assert self._zc is not None
            found = info.load_from_cache(self._zc)
            if not found and timeout_s > 0 and not self._closed:
                found = info.request(self._zc, timeout=int(timeout_s * 1000))
        except Exception as exc:  # hostile names or a closing Zeroconf
            self._warn_once(name, f"cannot resolve: {exc!r}")
            found = False
        session = self._parse(name, info) if found and info is not None else None
        if session is None:
            self._drop(name)
        else:
            self._store(name, session)

    def _parse(self, name: str, info: ServiceInfo) -> DiscoveredSession | None:
        try:
            addresses = _rank_addresses(info.parsed_addresses(IPVersion.V4Only))
            if not addresses:
                raise AdvertError("no IPv4 address")
            advert = from_txt(info.properties, port=info.port)  # type: ignore[arg-type]
        except AdvertError as exc:
            self._warn_once(name, str(exc))
            return None
        return DiscoveredSession(advert=advert, addresses=addresses, instance=name)

    def _warn_once(self, name: str, why: str) -> None:
        if name in self._warned or len(self._warned) >= 4 * MAX_NAMES:
            return
        self._warned.add(name)
        log.warning("ignoring mDNS advert %r: %s", name, why)

    def _store(self, name: str, session: DiscoveredSession) -> None:
        with self._lock:
            changed = self._sessions.get(name) != session
            self._sessions[name] = session
        if changed:
            log.debug("session %r at %s: %s", session.name, session.address, session.advert)
            self._changed()

    def _drop(self, name: str) -> None:
        with self._lock:
            gone = self._sessions.pop(name, None)
        if gone is not None:
            log.debug("session %r is gone", gone.name)
            self._changed()

    def _changed(self) -> None:
        if self._on_change is None:
            return
        try:
            self._on_change(self.sessions())
        except Exception:
            log.exception("on_change callback failed (ignored)")


def discover(timeout_s: float, *, interfaces: Sequence[str] | None = None,
             resolve_timeout_s: float = 3.0) -> list[DiscoveredSession]:
    """Browse the LAN for ``timeout_s`` seconds and return the sessions found, by name.

    Blocks for ``timeout_s`` plus shutdown (well under a second). A hub that is already
    advertising answers within about 0.2 s; one that starts during the scan needs about
    1.5 s more (mDNS probing).

    Raises:
        DiscoveryError: mDNS is unavailable on this machine.
    """
    with SessionBrowser(interfaces=interfaces, resolve_timeout_s=resolve_timeout_s) as browser:
        threading.Event().wait(timeout_s)
        return browser.sessions()


def _rank_addresses(addresses: Sequence[str]) -> tuple[str, ...]:
    return rank_addresses(addresses, local_networks())


# Container bridges (docker, podman): advertised by hubs that run them, reachable from
# nowhere else.
_CONTAINER_NETS = tuple(ipaddress.IPv4Network(n) for n in ("172.17.0.0/16", "10.88.0.0/16"))


def rank_addresses(addresses: Sequence[str],
                   networks: Sequence[ipaddress.IPv4Network] = ()) -> tuple[str, ...]:
    """A hub's addresses, most likely to answer first: on one of this machine's networks,
    then other routable ones, container bridges, and loopback and link-local last."""
    def rank(ip: str) -> tuple[bool, bool, bool, bool]:
        parsed = ipaddress.IPv4Address(ip)
        return (parsed.is_loopback, parsed.is_link_local,
                any(parsed in net for net in _CONTAINER_NETS),
                not any(parsed in net for net in networks))
    return tuple(sorted(addresses, key=rank))


def local_networks() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks this machine is on (its adapters' addresses and prefixes)."""
    found = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            if isinstance(ip.ip, str):
                try:
                    found.append(ipaddress.IPv4Network(f"{ip.ip}/{ip.network_prefix}",
                                                       strict=False))
                except ValueError:
                    continue
    return found
