"""A hub's address as people type it: HOST, HOST:PORT or tcp://HOST:PORT. Light to import
(the command line reads an address before torch loads)."""

from __future__ import annotations

from .defaults import DEFAULT_PORT
from .errors import ConfigError
from .protocol.ports import HubPorts


def parse_address(text: str) -> tuple[str, int]:
    """(host, port) of ``text``; the port is DEFAULT_PORT when it names none.

    Raises:
        ConfigError: the text is not an address (or its port leaves no room for P+2).
    """
    text = text.strip()
    rest = text.split("://", 1)[1] if "://" in text else text
    host, sep, port = rest.rpartition(":")
    if not sep:
        host, port = rest, str(DEFAULT_PORT)
    if not host or " " in host or not port.isdigit() or not HubPorts.valid_request(int(port)):
        raise ConfigError(f"“{text}” is not a hub address: use HOST, HOST:PORT or "
                          "tcp://HOST:PORT")
    return host, int(port)
