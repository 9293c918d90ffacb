"""LAN discovery of hub sessions over mDNS (the only package that imports zeroconf).

``advert`` (pure) maps a session to its small, versioned, secret-free TXT record;
``Advertiser`` publishes one on the hub; ``SessionBrowser`` and ``discover`` find them on
a worker; ``pick_session`` chooses one with errors that say what to do next.
"""

from .advert import (
    SERVICE_TYPE,
    TXT_VERSION,
    SessionAdvert,
    from_txt,
    instance_label,
    key_fingerprint,
    new_session_id,
    to_txt,
)
from .advertiser import DEFAULT_TTL_S, Advertiser
from .browser import DiscoveredSession, SessionBrowser, discover
from .errors import AdvertError, DiscoveryError, SessionNotFoundError
from .picking import NO_SESSION, describe, pick_session

__all__ = [
    "DEFAULT_TTL_S", "NO_SESSION", "SERVICE_TYPE", "TXT_VERSION", "AdvertError", "Advertiser",
    "DiscoveredSession", "DiscoveryError", "SessionAdvert", "SessionBrowser",
    "SessionNotFoundError", "describe", "discover", "from_txt", "instance_label",
    "key_fingerprint", "new_session_id", "pick_session", "to_txt",
]
