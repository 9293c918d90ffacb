"""Does mDNS work on this machine? Advertise a throwaway service and look for it (the doctor).

The service type is the doctor's own (``_csdoctor._tcp``), so no session list anywhere ever
shows it; its records live ``TTL_S`` seconds and a goodbye withdraws them at once.
"""

from __future__ import annotations

import secrets
import threading
import time

from zeroconf import ServiceBrowser, ServiceInfo, ServiceStateChange, Zeroconf

from .advertiser import open_zeroconf

DOCTOR_TYPE = "_csdoctor._tcp.local."
TTL_S = 10


def own_advert_seen(address: str, wait_s: float) -> float | None:
    """Advertise a throwaway service on ``address`` and browse for it from a second mDNS
    stack on the same address: the seconds until it was seen, or None when it never was
    within ``wait_s``.

    Raises:
        DiscoveryError: mDNS cannot start on that address.
    """
    token = secrets.token_hex(4)
    wanted = f"doctor-{token}.{DOCTOR_TYPE}"
    info = ServiceInfo(DOCTOR_TYPE, wanted, port=9, properties={"v": "1"},
                       server=f"csdoctor-{token}.local.", host_ttl=TTL_S, other_ttl=TTL_S,
                       parsed_addresses=[address])
    seen = threading.Event()

    def on_change(zeroconf: Zeroconf, service_type: str, name: str,
                  state_change: ServiceStateChange) -> None:  # called by keyword
        if name == wanted and state_change is ServiceStateChange.Added:
            seen.set()

    listener = open_zeroconf([address])
    try:
        speaker = open_zeroconf([address])
    except BaseException:
        listener.close()
        raise
    browser = ServiceBrowser(listener, DOCTOR_TYPE, handlers=[on_change])
    start = time.monotonic()
    try:
        # The name holds a random token: no probing for a conflict (saves 1.2 s).
        speaker.register_service(info, cooperating_responders=True)
        found = seen.wait(wait_s)
        speaker.unregister_service(info)
    finally:
        browser.cancel()
        speaker.close()
        listener.close()
    return time.monotonic() - start if found else None
