"""Where a hub listens: three consecutive ports, all built from the request port. Pure.

The hub binds them, its advert announces them, a worker connects to them and the command
line's help describes them: each reads the layout here, so it is written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

MAX_PORT = 65535


@dataclass(frozen=True, slots=True)
class HubPorts:
    """A hub's ports: requests on P, events on P+1, pairing on P+2."""

    request: int  # ROUTER, CURVE: joins, pulls, pushes
    events: int  # PUB, CURVE: the session's events for paired listeners
    pairing: int  # ROUTER, plain: the PIN handshake (SPAKE2)

    COUNT: ClassVar[int] = 3  # consecutive ports a hub needs free
    LAYOUT: ClassVar[str] = "requests P, events P+1, pairing P+2"  # for help texts
    MAX_REQUEST: ClassVar[int] = MAX_PORT - 2  # the highest P whose P+2 is still a port

    @classmethod
    def at(cls, request: int) -> HubPorts:
        """The layout of a hub whose request port is ``request``."""
        return cls(request, request + 1, request + 2)

    @classmethod
    def valid_request(cls, port: int) -> bool:
        """True when a hub can listen on ``port`` and the two after it."""
        return 0 < port <= cls.MAX_REQUEST
