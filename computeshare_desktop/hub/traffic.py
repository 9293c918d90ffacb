"""What the bytes on the wire were for: data (the samples of a shard), model (the model each
round and a shipped graph) and update (the pushes). Pure.

Each message is counted whole, headers included, as ``bytes_in``/``bytes_out`` count it;
the rest of those (joins, pings, acks, long-polls) is control. The split runs from one
round's close to the next, so the first round holds what moved before training started
(the shards downloaded after each Welcome), and a later round the shard of a worker that
joined during it.

Beside the split, the whole session's bytes each way (``sent``, ``received``): every
request and every reply on the workers' socket, at any time (before training, between
rounds, after the last one), which is what the hub's window shows as Sent / received.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..events import Event, RoundClosed
from ..protocol.messages import GraphData, Model, Push, ShardData

DATA, MODEL, UPDATE = "data_bytes", "model_bytes", "update_bytes"

# Message type -> what its bytes are for; any other message is control.
PURPOSE: dict[type, str] = {
    ShardData: DATA,  # samples of the worker's shard
    Model: MODEL,  # the round's model (whole or a delta) and its running statistics
    GraphData: MODEL,  # a part of the model's checked graph, once per worker
    Push: UPDATE,  # a worker's update, accepted or not
}


@dataclass(slots=True)
class Traffic:
    """Bytes by purpose since the last round closed, and each way since the session began."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PURPOSE.values(), 0))
    sent: int = 0  # every reply to a worker's socket, shards included (one writer: the core)
    received: int = 0  # every request on it, refused ones included

    def came(self, nbytes: int) -> None:
        """A request of ``nbytes`` arrived (before it is read: a refused one counts too)."""
        self.received += nbytes

    def went(self, nbytes: int) -> None:
        """A reply of ``nbytes`` went out."""
        self.sent += nbytes

    def totals(self) -> tuple[int, int]:
        """Bytes sent and received since the session began (a view may poll it)."""
        return self.sent, self.received

    def count(self, msg: Any, nbytes: int) -> None:
        """``msg`` crossed the wire in ``nbytes`` (a request or a reply)."""
        purpose = PURPOSE.get(type(msg))
        if purpose is not None:
            self.counts[purpose] += nbytes

    def take(self) -> dict[str, int]:
        """The counts so far; they start again from zero."""
        taken, self.counts = self.counts, dict.fromkeys(self.counts, 0)
        return taken

    def split(self, events: list[Event]) -> list[Event]:
        """``events`` with the closing round's split filled in (one round closes at a time)."""
        return [msgspec.structs.replace(e, **self.take()) if isinstance(e, RoundClosed) else e
                for e in events]
