"""What a transport may use of a hub session: a narrow interface, so the transport never
reaches into the core's attributes (and a test double needs only these methods)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

from ..events import Event
from ..protocol.wire import Frame

if TYPE_CHECKING:
    from .config import HubConfig
    from .core import Reply

EventSink = Callable[[Event], None]


@dataclass(frozen=True, slots=True)
class HubResult:
    """How a session ended."""

    accuracy: float
    loss: float
    version: int
    model_path: Path
    seconds: float  # training time: from the first round (not the wait for workers) on


@dataclass(frozen=True, slots=True)
class SessionStatus:
    """What the LAN advert says about a session, read at one moment."""

    session_id: str
    config: "HubConfig"
    state: str
    version: int
    joined: int


class HubEndpoint(Protocol):
    """A hub session as its transports see it (HubSession implements it)."""

    @property
    def done(self) -> bool: ...

    @property
    def version(self) -> int: ...

    def handle(self, peer: bytes, frames: Sequence[Frame], now: float,
               peer_key: str | None) -> list["Reply"]: ...

    def handle_pairing(self, peer: bytes, frames: Sequence[Frame], now: float,
                       source: str | None = None) -> list["Reply"]: ...

    def tick(self, now: float) -> list["Reply"]: ...

    def tell_stopping(self) -> list["Reply"]: ...

    def allows(self, key: str) -> bool: ...

    def probing(self, key: str) -> bool: ...

    def removed(self, key: str) -> bool: ...

    def all_told(self) -> bool: ...

    def kick(self, worker_id: int, block: bool = False) -> bool: ...

    def allow_again(self, key: str) -> bool: ...

    def set_pin(self, pin: str) -> None: ...

    def subscribe(self, sink: EventSink) -> None: ...

    def status(self) -> SessionStatus: ...

    def finish(self) -> HubResult: ...
