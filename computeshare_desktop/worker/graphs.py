"""Fetching the hub's model graph after the Welcome, part by part, for the core. Pure.

The parts come in order (``manifest``, ``program``, ``state``), each as byte ranges of at
most the hub's chunk size. The manifest is decoded strictly and bounds the rest: the
program must have its size and sha256, the state its size, and each state tensor its
dtype and shape (``protocol/graphs.py``). Nothing here looks inside the program: the
compute's factory checks it (``graph.load_training_graph``) before anything of it runs.

A reply that is not the range asked for is the hub breaking the protocol (RejectedError);
parts that do not hold together are a graph this worker refuses (GraphRefused), which
the core tells the hub about.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import RejectedError, RemoteProtocolError
from ..graph import GraphRefused
from ..graph.contract import read_manifest
from ..protocol import RejectCode
from ..protocol.graphs import MAX_MANIFEST_BYTES, MAX_PROGRAM_BYTES, Manifest, state_tensors
from ..protocol.messages import GraphData, GraphGet, GraphPart, Welcome
from ..protocol.wire import Frame

GRAPH_CHUNK = 4 * 1024 * 1024  # bytes of one GRAPH_DATA at most (the hub's chunk)
PARTS: tuple[GraphPart, ...] = ("manifest", "program", "state")


@dataclass(frozen=True, eq=False)
class ReceivedGraph:
    """The hub's graph as it arrived, not yet checked: the compute's factory checks it
    (``graph.accept_parts``, the hub's own check)."""

    manifest: Manifest  # decoded already: it bounds the other parts' downloads
    parts: dict[str, bytearray]  # GraphPart -> its bytes, as served (each one buffer)

    @property
    def program(self) -> bytes:
        return bytes(self.parts["program"])

    @property
    def state(self) -> dict[str, torch.Tensor]:
        """The state part decoded (a model offered as code copies these in)."""
        try:
            return state_tensors(self.parts.get("state", b""), self.manifest)
        except RemoteProtocolError as exc:
            raise GraphRefused(f"the graph's state: {exc.detail}") from None


class GraphDownload:
    """The parts of one Welcome's graph, in order."""

    def __init__(self, welcome: Welcome) -> None:
        self.welcome = welcome
        self._part = 0  # index in PARTS
        # The part being fetched: one buffer of its whole size, made on its first reply and
        # filled in place, then kept as it is (the state is decoded as views of it), so a
        # part is never held twice: no growing bytearray, no bytes() copy of it.
        self._data = bytearray()
        self._filled = 0  # bytes of _data received
        self.manifest: Manifest | None = None
        self._parts: dict[str, bytearray] = {}

    def request(self) -> GraphGet | None:
        """The next range to ask for; None once every part is here."""
        while self._part < len(PARTS) and self._expected() == 0:
            self._part += 1  # an empty state: nothing to fetch
        if self._part >= len(PARTS):
            return None
        return GraphGet(token=self.welcome.token, part=PARTS[self._part],
                        offset=self._filled)

    def take(self, msg: GraphData, body: list[Frame]) -> None:
        """Keep a range. RejectedError(MALFORMED) when it is not the one asked for;
        GraphRefused when a finished part does not fit the manifest."""
        part, chunk = PARTS[self._part], body[0]
        total = self._expected() if not self._filled else len(self._data)
        if msg.part != part or msg.offset != self._filled or not chunk \
                or (total is not None and msg.total != total) \
                or msg.total > _cap(part) or self._filled + len(chunk) > msg.total:
            raise RejectedError(RejectCode.MALFORMED, f"unexpected {part} range from the hub")
        if not self._filled:
            self._data = bytearray(msg.total)  # its size is the manifest's, or capped
        self._data[self._filled:self._filled + len(chunk)] = chunk
        self._filled += len(chunk)
        if self._filled == msg.total:
            self._finish_part(part, self._data)
            self._part, self._data, self._filled = self._part + 1, bytearray(), 0

    def result(self) -> ReceivedGraph:
        """The whole graph (once ``request`` returns None)."""
        assert self.manifest is not None and self._part >= len(PARTS)
        return ReceivedGraph(self.manifest, self._parts)

    def _expected(self) -> int | None:
        """The current part's size as the manifest says (None: not known yet)."""
        if self.manifest is None or self._part >= len(PARTS):
            return None
        return {"program": self.manifest.program_bytes,
                "state": self.manifest.state_bytes}[PARTS[self._part]]

    def _finish_part(self, part: GraphPart, data: bytearray) -> None:
        if part == "manifest":
            self.manifest = read_manifest(data, self.welcome.fingerprint)
        self._parts[part] = data


def _cap(part: GraphPart) -> int:
    return {"manifest": MAX_MANIFEST_BYTES, "program": MAX_PROGRAM_BYTES}.get(part, 2**62)
