"""A worker holds the hub's graph once while it downloads and checks it.

Each part is one buffer of the manifest's size, filled in place and kept as it is; the
state's tensors are views of that buffer until the loader makes the module's own copy. A
64 MiB state then costs one buffer and the module's tensors (the download held a growing
bytearray, a bytes copy of it, an array copy and the module's: a 512 MiB state peaked at
+1.5 GiB). And a program over the one cap is refused with the manifest, before any of it
is fetched.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import msgspec
import pytest
import torch
from torch import nn

from computeshare_desktop.graph import GraphRefused, export_training_graph
from computeshare_desktop.hub.user_model import ShippedGraph
from computeshare_desktop.protocol.graphs import (MAX_PROGRAM_BYTES, decode_manifest,
                                                  encode_manifest, state_tensors)
from computeshare_desktop.protocol.messages import GraphData
from computeshare_desktop.worker.graphs import GRAPH_CHUNK, GraphDownload

STATE_MIB = 64


class Frozen(nn.Module):
    """A frozen 64 MiB projection (state, not trained) and a small trained head."""

    def __init__(self) -> None:
        super().__init__()
        self.project = nn.Linear(784, STATE_MIB * 2**18 // 784, bias=False).requires_grad_(False)
        self.head = nn.Linear(self.project.out_features, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.project(x.flatten(1)))


@pytest.fixture(scope="module")
def shipped() -> ShippedGraph:
    torch.manual_seed(0)
    model = Frozen().train()
    graph = export_training_graph(model, torch.randn(2, 1, 28, 28))
    return ShippedGraph.of(graph, "frozen", [])


def download(parts: dict[str, bytes], fingerprint: str) -> GraphDownload:
    """What the worker core does with the hub's GRAPH_DATA replies, range by range."""
    fetch = GraphDownload(SimpleNamespace(token="t", fingerprint=fingerprint))  # type: ignore[arg-type]
    while (ask := fetch.request()) is not None:
        data = parts[ask.part]
        chunk = data[ask.offset:ask.offset + GRAPH_CHUNK]
        fetch.take(GraphData(part=ask.part, offset=ask.offset, total=len(data)), [chunk])
    return fetch


def test_each_part_is_one_buffer_and_the_state_is_decoded_in_place(shipped):
    received = download(shipped.parts, shipped.manifest.fingerprint).result()
    assert {p: bytes(b) for p, b in received.parts.items()} == shipped.parts
    buffer = received.parts["state"]
    start = torch.frombuffer(buffer, dtype=torch.uint8).data_ptr()
    for tensor in state_tensors(buffer, received.manifest).values():
        assert start <= tensor.data_ptr() < start + len(buffer)  # a view, not a copy


def test_a_program_over_the_cap_is_refused_before_it_is_fetched(shipped):
    manifest = msgspec.structs.replace(shipped.manifest, program_bytes=MAX_PROGRAM_BYTES + 1)
    parts = {**shipped.parts, "manifest": encode_manifest(manifest)}
    fetch = GraphDownload(SimpleNamespace(token="t", fingerprint=manifest.fingerprint))  # type: ignore[arg-type]
    ask = fetch.request()
    assert ask is not None and ask.part == "manifest"
    with pytest.raises(GraphRefused, match="program_bytes"):
        fetch.take(GraphData(part="manifest", offset=0, total=len(parts["manifest"])),
                   [parts["manifest"]])
    assert fetch.manifest is None


CHILD = textwrap.dedent("""
    import json, sys, torch
    from pathlib import Path
    from types import SimpleNamespace
    from computeshare_desktop.graph.contract import accept_parts
    from computeshare_desktop.protocol.messages import GraphData
    from computeshare_desktop.worker.graphs import GRAPH_CHUNK, GraphDownload

    def hwm():
        line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
        return int(line.split()[1]) * 1024

    root, fingerprint = Path(sys.argv[1]), sys.argv[2]
    accept_parts({p: (root / p).read_bytes() for p in ("manifest", "program", "state")},
                 hub_torch=torch.__version__, fingerprint=fingerprint)  # warm: imports
    files = {p: (root / p).open("rb") for p in ("manifest", "program", "state")}
    Path("/proc/self/clear_refs").write_text("5")  # the peak is now: the warm-up's is gone
    before = hwm()
    fetch = GraphDownload(SimpleNamespace(token="t", fingerprint=fingerprint))
    while (ask := fetch.request()) is not None:
        file = files[ask.part]
        size = file.seek(0, 2)
        file.seek(ask.offset)
        chunk = file.read(GRAPH_CHUNK)  # a GRAPH_DATA frame, as it comes off the socket
        fetch.take(GraphData(part=ask.part, offset=ask.offset, total=size), [chunk])
        del chunk
    accepted = accept_parts(fetch.result().parts, hub_torch=torch.__version__,
                            fingerprint=fingerprint)
    print(json.dumps({"growth": hwm() - before}))
""")


def test_downloading_and_checking_holds_the_state_twice_at_most(shipped, tmp_path: Path):
    """Measured in a fresh process, from outside torch: its peak resident size."""
    for name, data in shipped.parts.items():
        (tmp_path / name).write_bytes(data)
    run = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path),
                          shipped.manifest.fingerprint], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    growth = json.loads(run.stdout.splitlines()[-1])["growth"]
    state = decode_manifest(shipped.parts["manifest"]).state_bytes
    assert state >= STATE_MIB * 2**20 * 0.99
    # the download's buffer and the module's copy, and what checking a small graph takes
    assert growth < 2 * state + 24 * 2**20, f"+{growth / 2**20:.0f} MiB for a " \
        f"{state / 2**20:.0f} MiB state"
