"""Publish one hub session on the LAN over mDNS, with short TTLs and throttled updates.

Liveness: every record is sent with a short TTL (``ttl_s``, 10 s by default) and re-announced
every ``0.4 * ttl_s``, so a hub that dies without a goodbye drops out of every browser's cache
within ``ttl_s`` of its last announcement (``SessionBrowser`` then removes it; see there for
the bound). A clean ``close()`` sends goodbyes and browsers drop the session at once.

Threads: the Zeroconf event loop (when this object creates the Zeroconf instance) and one
``computeshare-advertiser`` thread that publishes throttled updates and keep-alives. Both are
joined by ``close()``.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import time
from collections.abc import Sequence
from types import TracebackType

import ifaddr  # python-zeroconf's own dependency for listing adapters
from zeroconf import InterfaceChoice, IPVersion, ServiceInfo, Zeroconf

from .advert import SERVICE_TYPE, SessionAdvert, instance_label, to_txt
from .errors import DiscoveryError

log = logging.getLogger(__name__)

DEFAULT_TTL_S = 10
KEEPALIVE_FRACTION = 0.4  # two keep-alives per TTL: one lost packet does not expire a live hub
MIN_KEEPALIVE_S = 1.1  # python-zeroconf ignores an identical packet repeated within 1 s


def zeroconf_interfaces(interfaces: Sequence[str] | None) -> list[str] | InterfaceChoice:
    """Map our ``interfaces`` argument to python-zeroconf's (None: every interface)."""
    return InterfaceChoice.All if interfaces is None else list(interfaces)


def open_zeroconf(interfaces: Sequence[str] | None) -> Zeroconf:
    """Create an IPv4 Zeroconf instance on ``interfaces``, or raise DiscoveryError."""
    try:
        return Zeroconf(interfaces=zeroconf_interfaces(interfaces), ip_version=IPVersion.V4Only)
    except (OSError, ValueError) as exc:
        raise DiscoveryError(f"mDNS is unavailable on this machine ({exc}); give the hub's "
                             "address instead: computeshare join HOST:PORT") from exc


def advertised_addresses(interfaces: Sequence[str] | None) -> list[str]:
    """IPv4 addresses to advertise: the given interface addresses, else every non-loopback."""
    if interfaces is not None:
        found = [ip for ip in interfaces if _ipv4(ip) is not None]
    else:
        found = [ip.ip for adapter in ifaddr.get_adapters() for ip in adapter.ips
                 if isinstance(ip.ip, str) and _ipv4(ip.ip) is not None]
        outside = [ip for ip in found if not ipaddress.IPv4Address(ip).is_loopback]
        found = outside or found
    if not found:
        raise DiscoveryError(f"no IPv4 address to advertise on interfaces {interfaces!r}")
    return found


class Advertiser:
    """Registers a SessionAdvert as an mDNS service and keeps it fresh until ``close()``."""

    def __init__(self, advert: SessionAdvert, *, interfaces: Sequence[str] | None = None,
                 addresses: Sequence[str] | None = None, zeroconf: Zeroconf | None = None,
                 ttl_s: int = DEFAULT_TTL_S, min_interval_s: float = 1.0,
                 probe: bool = True) -> None:
        if type(ttl_s) is not int or ttl_s < 1:
            raise ValueError(f"ttl_s must be a positive whole number of seconds, got {ttl_s!r}")
        to_txt(advert)  # a bad advert is the caller's bug: fail here, not in a thread
        self._advert = advert
        self._interfaces = None if interfaces is None else list(interfaces)
        self._addresses = list(addresses) if addresses else advertised_addresses(interfaces)
        self._zc, self._owns_zc = zeroconf, zeroconf is None
        self.ttl_s, self.min_interval_s, self.probe = ttl_s, min_interval_s, probe
        self.keepalive_s = max(MIN_KEEPALIVE_S, KEEPALIVE_FRACTION * ttl_s)
        self._cond = threading.Condition()
        self._io = threading.Lock()  # one register/update/announce/goodbye on the wire at a time
        self._pending: SessionAdvert | None = None
        self._info: ServiceInfo | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._last_publish = self._last_announce = 0.0

    @property
    def advert(self) -> SessionAdvert:
        """The latest advert given (published, or pending publication)."""
        return self._advert

    @property
    def instance(self) -> str | None:
        """The registered mDNS service name, or None before ``start()``."""
        return None if self._info is None else self._info.name

    def start(self) -> Advertiser:
        """Register the service; returns self.

        Blocks about 1.7 s: 1.2 s of mDNS probing for a name conflict, then 0.5 s of
        announcements. ``probe=False`` skips the probing (the instance name already holds
        the random session id), for about 0.5 s in all.

        Raises:
            DiscoveryError: mDNS is unavailable or the registration failed.
        """
        with self._cond:
            if self._closed or self._info is not None:
                raise RuntimeError("Advertiser.start() may be called once, before close()")
        if self._zc is None:
            self._zc = open_zeroconf(self._interfaces)
        try:
            info = self._build_info(self._advert, None)
            with self._io:
                self._zc.register_service(info, allow_name_change=True,
                                          cooperating_responders=not self.probe)
        except Exception as exc:
            self._close_zeroconf()
            raise DiscoveryError(f"could not advertise the session on the LAN: {exc!r}") from exc
        self._info = info
        self._last_publish = self._last_announce = time.monotonic()
        log.info("advertising %r on %s (ttl %d s)", info.name, self._addresses, self.ttl_s)
        self._thread = threading.Thread(  # named after the thread that made it (log scopes)
            target=self._run, daemon=True, name=f"{threading.current_thread().name}/advert")
        self._thread.start()
        return self

    def update(self, advert: SessionAdvert) -> None:
        """Queue a new advert; it goes out at most once per ``min_interval_s``. Never blocks."""
        to_txt(advert)
        with self._cond:
            if self._closed:
                return
            self._advert = self._pending = advert
            self._cond.notify_all()

    def flush(self) -> None:
        """Publish the pending advert now, ignoring the throttle (blocks about 0.5 s)."""
        with self._cond:
            advert, self._pending = self._pending, None
        if advert is not None:
            self._publish(advert)

    def close(self) -> None:
        """Send goodbyes, stop the thread and close an owned Zeroconf; idempotent."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
        if self._info is not None and self._zc is not None:
            try:
                with self._io:
                    self._zc.unregister_service(self._info)
            except Exception as exc:  # goodbyes are a courtesy; the TTL covers their loss
                log.warning("could not send mDNS goodbye for %r: %r", self._info.name, exc)
        self._close_zeroconf()

    def __enter__(self) -> Advertiser:
        """Register unless ``start()`` was already called."""
        return self if self._info is not None else self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _build_info(self, advert: SessionAdvert, name: str | None) -> ServiceInfo:
        return ServiceInfo(
            SERVICE_TYPE, name or f"{instance_label(advert)}.{SERVICE_TYPE}", port=advert.port,
            properties=to_txt(advert), server=f"computeshare-{advert.session_id}.local.",
            host_ttl=self.ttl_s, other_ttl=self.ttl_s, parsed_addresses=self._addresses)

    def _run(self) -> None:
        while True:
            with self._cond:
                advert = self._next_job()
                if self._closed:
                    return
            if advert is not None:
                self._publish(advert)
            else:
                self._announce()

    def _next_job(self) -> SessionAdvert | None:
        """Wait (holding the condition) until an update or a keep-alive is due."""
        while not self._closed:
            now = time.monotonic()
            update_at = self._last_publish + self.min_interval_s
            if self._pending is not None and now >= update_at:
                advert, self._pending = self._pending, None
                return advert
            keepalive_at = self._last_announce + self.keepalive_s
            if now >= keepalive_at:
                return None
            due = min(keepalive_at, update_at) if self._pending is not None else keepalive_at
            self._cond.wait(due - now)
        return None

    def _publish(self, advert: SessionAdvert) -> None:
        with self._io:
            if self._zc is None or self._info is None or self._zc.done:
                return
            info = self._build_info(advert, self._info.name)
            try:
                self._zc.update_service(info)
            except Exception as exc:
                log.warning("could not update the mDNS advert %r: %r", info.name, exc)
                return
            self._info = info
            self._last_publish = self._last_announce = time.monotonic()

    def _announce(self) -> None:
        with self._io:
            self._last_announce = time.monotonic()
            if self._zc is None or self._info is None or self._zc.done:
                return
            try:
                self._zc.send(self._zc.generate_service_broadcast(self._info, None))
            except Exception as exc:
                log.warning("could not re-announce the mDNS advert: %r", exc)

    def _close_zeroconf(self) -> None:
        if self._owns_zc and self._zc is not None:
            self._zc.close()
            self._zc = None


def _ipv4(text: object) -> ipaddress.IPv4Address | None:
    if not isinstance(text, str):  # python-zeroconf also takes interface indexes
        return None
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        return None
