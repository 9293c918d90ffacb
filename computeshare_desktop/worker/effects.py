"""What ``WorkerCore`` asks its driver to do: the effects, and the round's work.

Every call into the core returns a list of effects: any number of ``Emit`` first, then
exactly one action (``Send``, ``Prepare``, ``Keep``, ``Load``, ``Work``, ``WaitUntil``,
``Goodbye`` or ``Finish``). The driver carries the action out and reports how it went
through the matching input (``replied``, ``prepared``, ``kept``, ``loaded``, ``computed``,
``woke``, ``said_goodbye``); ``Finish`` ends the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import torch

from ..events import Event
from ..protocol import encode
from ..protocol.messages import Welcome
from ..protocol.wire import Frame
from .compute import Compute, Update
from .graphs import ReceivedGraph
from .options import WorkerResult
from .shard_reuse import Fresh


@dataclass(frozen=True, slots=True)
class Emit:
    """Tell the views: ``event`` happened."""

    event: Event


@dataclass(frozen=True, slots=True)
class Send:
    """Send one request and report its reply (``replied``), retrying as the driver sees fit.

    ``hub_key`` None: the unencrypted pairing channel; else the encrypted channel to the
    hub with that public key. ``timeout_s`` follows the bytes the request moves (LinkMeter).
    """

    message: Any
    frames: list[Frame]
    timeout_s: float
    hub_key: str | None

    @classmethod
    def of(cls, message: Any, timeout_s: float, hub_key: str | None,
           body: tuple[Frame, ...] = ()) -> Send:
        return cls(message, encode(message, body), timeout_s, hub_key)


@dataclass(frozen=True, slots=True)
class Prepare:
    """Check that this machine can compute the session's model (the factory raises
    RejectedError(ARCH_MISMATCH) if not, or GraphRefused for a ``graph`` it refuses),
    before the shard is downloaded; report with ``prepared``, with what the driver's shard
    cache holds of the Welcome's shard when it has one."""

    welcome: Welcome
    graph: ReceivedGraph | None = None  # the hub's graph (None: a built-in, by name)


@dataclass(frozen=True, slots=True)
class Keep:
    """Write a chunk the hub sent into the shard cache; report with ``kept``."""

    chunk: Fresh


@dataclass(frozen=True, slots=True)
class Load:
    """Build the compute from the Welcome and the whole shard; report its size with
    ``loaded``. No images and labels: the shard is whole in the driver's cache."""

    welcome: Welcome
    images: torch.Tensor | None = None
    labels: torch.Tensor | None = None


@dataclass(frozen=True, slots=True)
class Task:
    """One round's work as the hub planned it: a gradient (``steps`` 0) or local steps."""

    weights: torch.Tensor
    start: int
    batch: int
    steps: int
    lr: float
    momentum: float
    velocity: torch.Tensor | None  # updated in place by local steps with momentum
    stats: torch.Tensor | None = None  # the hub's running statistics (graphs that have any)

    def run(self, compute: Compute) -> Update:
        """Do the work on ``compute`` (from the hub's running statistics, if any)."""
        if self.stats is not None:
            compute.load_stats(self.stats)
        if self.steps == 0:
            return compute.gradient(self.weights, self.start, self.batch)
        return compute.local_steps(self.weights, self.start, self.batch, self.steps, self.lr,
                                   momentum=self.momentum, velocity=self.velocity)


@dataclass(frozen=True, slots=True)
class Work:
    """Run ``task`` on the compute; report the update with ``computed``."""

    task: Task


@dataclass(frozen=True, slots=True)
class WaitUntil:
    """Do nothing until ``at`` (cut short by a stop); then call ``woke``."""

    at: float


@dataclass(frozen=True, slots=True)
class Goodbye:
    """The session is over: stop the heartbeat, send ``send`` once without retrying (its
    answer does not matter), then call ``said_goodbye``."""

    send: Send


@dataclass(frozen=True, slots=True)
class Finish:
    """The end: return ``result``, or raise ``error``."""

    result: WorkerResult | None = None
    error: BaseException | None = None


Action = Union[Send, Prepare, Keep, Load, Work, WaitUntil, Goodbye, Finish]
Effect = Union[Emit, Action]
