"""What a worker session is given and gives back, and the channels it talks through.

Sockets stay outside the worker core: it talks through a ``Channel`` (request -> reply
frames, ``TimeoutError`` on silence) that a ``Connector`` makes, so the loop runs the same
over ZeroMQ, in tests, or over any future transport.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from ..join_options import JoinOptions
from ..protocol.wire import Frame
from ..schema import default


class Channel(Protocol):
    """A request/reply link to the hub."""

    def request(self, frames: Sequence[Frame], timeout_s: float,
                keep_waiting: Callable[[], bool] | None = None,
                abort: Callable[[], bool] | None = None) -> list[bytes]:
        """The reply; TimeoutError on silence, InterruptedError when ``abort()`` is true."""
        ...
    def close(self) -> None: ...


class Connector(Protocol):
    """Makes the channels to one hub."""

    @property
    def public_key(self) -> str: ...
    def pairing(self) -> Channel: ...
    def channel(self, server_key: str) -> Channel: ...


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How a worker behaves; the CLI and the GUI fill these in."""

    pin: str
    name: str
    request_timeout_s: float = 5.0  # plus the transfer time of its bytes (see LinkMeter)
    first_contact_s: float = default(JoinOptions, "first_contact_s")  # give up this soon if
    # the hub never answered at all
    give_up_s: float = default(JoinOptions, "give_up_s")  # after this long without an answer
    lost_after_s: float = 6.0  # report the hub lost (and keep trying) after this much silence
    heartbeat_s: float = 1.0
    pull_wait_ms: int = 2000
    max_rate: float = default(JoinOptions, "max_rate")  # samples per second this worker
    # computes at most (0: no limit)
    cache_size: str = default(JoinOptions, "cache_size")  # the shard cache's cap ("0": off)


@dataclass(frozen=True, slots=True)
class WorkerResult:
    """How a worker's session ended."""

    pushed: int
    rejected: int
    version: int
    seconds: float
