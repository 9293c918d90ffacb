"""WorkerCore with the hub's graph, on the fake clock against an in-process HubCore: the
parts fetched between the Welcome and the shard, the graph checked and trained, and every
refusal told to the hub before the worker ends with a clear error."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
import torch
from helpers.graph import graph_hub, model_file
from helpers.hub import T0, TORCH, only, send
from worker_sim import Sim

from computeshare_desktop.errors import RejectedError
from computeshare_desktop.events import ModelReceived, ModelRefused, WorkerLeft
from computeshare_desktop.graph import GraphRefused
from computeshare_desktop.hub import core as hub_core
from computeshare_desktop.hub.user_model import ShippedGraph
from computeshare_desktop.protocol import RejectCode, encode
from computeshare_desktop.protocol.graphs import decode_manifest, encode_manifest, program_sha256
from computeshare_desktop.protocol.messages import (GraphGet, GraphRefusal, Join, Shard,
                                                    Welcome)
from computeshare_desktop.worker import GraphFactory
from computeshare_desktop.worker import core as worker_core
from computeshare_desktop.worker.effects import Goodbye

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> str:
    return model_file(tmp_path_factory.mktemp("model"))


def kinds(events: list[Any]) -> list[str]:
    return [e.kind for e in events]


def test_two_workers_fetch_check_and_train_the_graph(spec, monkeypatch) -> None:
    monkeypatch.setattr(hub_core, "MAX_GRAPH_CHUNK_BYTES", 4096)  # parts in many ranges
    hub, shipped = graph_hub(spec, rounds=3, codec="raw")
    before = [t.clone() for t in shipped.stat_buffers()]
    sim = Sim(hub)
    workers = [sim.worker(name, factory=GraphFactory(CPU)) for name in (b"w1", b"w2")]
    sim.finish_all()
    assert hub.done and hub.server.version == 3
    manifest = decode_manifest(shipped.graph.part("manifest"))
    for w in workers:
        assert w.finish.error is None, w.finish.error
        assert kinds(w.events) == ["paired", "joined", "shard", "model_received", "pushed",
                                   "pushed", "pushed", "done"]
        assert w.of_kind(ModelReceived) == [ModelReceived("stranger.py:Net", hub.server.numel,
                                                          manifest.op_count, "graph checked")]
        asked = [m for m in w.messages() if isinstance(m, GraphGet)]
        got = {part: sum(1 for m in asked if m.part == part) for part in
               ("manifest", "program", "state")}
        sizes = {p: len(shipped.graph.part(p)) for p in got}
        assert got == {p: -(-sizes[p] // 4096) for p in got}  # every range once, in order
        kinds_sent = [type(m) for m in w.messages()]
        assert kinds_sent.index(Shard) > max(i for i, k in enumerate(kinds_sent)
                                              if k is GraphGet)
        compute = w.compute
        assert compute.numel == hub.server.numel and len(compute.stats) == len(manifest.stats)
    after = shipped.stat_buffers()
    assert all(not torch.equal(a, b) for a, b in zip(after, before, strict=True))
    assert [int(c) for c in shipped.counters()] == [3] * 5


def hostile(shipped: Any, program: bytes, *, manifest: bool = True) -> ShippedGraph:
    """The hub's graph with another program (its manifest updated to match, as a hostile
    hub would, unless ``manifest`` is False)."""
    m = decode_manifest(shipped.graph.part("manifest"))
    if manifest:
        m = msgspec.structs.replace(m, program_bytes=len(program),
                                    program_sha256=program_sha256(program))
    return ShippedGraph(m, {"manifest": encode_manifest(m), "program": program,
                            "state": shipped.graph.part("state")})


def refused_session(hub: Any, name: bytes = b"w1") -> tuple[Sim, Any]:
    sim = Sim(hub)
    peer = sim.worker(name, factory=GraphFactory(CPU))
    sim.finish_all()
    return sim, peer


def test_a_graph_with_a_forbidden_op_is_refused_and_the_hub_is_told(spec) -> None:
    hub, shipped = graph_hub(spec, workers=1)
    tree = json.loads(shipped.graph.part("program"))
    node = next(n for n in tree["graph_module"]["graph"]["nodes"]
                if n["target"] == "torch.ops.aten.convolution.default")
    node["target"] = "torch.ops.aten._foobar.default"  # not on the allow-list
    hub.graph = hostile(shipped, json.dumps(tree).encode())
    _, peer = refused_session(hub)
    error = peer.finish.error
    assert isinstance(error, GraphRefused) and "_foobar" in error.reason
    told = [m for m in peer.messages() if isinstance(m, GraphRefusal)]
    assert error.where  # the node it concerns, which the worker knows by name only
    assert told == [GraphRefusal(token=peer.core.token or told[0].token,
                                 reason=error.reason[:256], where=error.where)]
    assert not any(isinstance(m, Shard) for m in peer.messages())  # nothing downloaded after
    events = hub.drain_events()
    assert [e.reason for e in events if isinstance(e, WorkerLeft)] == ["model_refused"]
    refused = [e for e in events if isinstance(e, ModelRefused)]
    assert [e.name for e in refused] == ["w1"]  # the hub names the layer the worker could not
    assert refused[0].reason.startswith(f"layer stem.0: nn.Conv2d: {error.reason[:256]}; ")
    assert len(hub.members) == 0


def test_a_program_that_is_not_its_manifests_is_refused_and_told(spec) -> None:
    hub, shipped = graph_hub(spec, workers=1)
    program = shipped.graph.part("program").replace(b'"nodes"', b'"nodeS"', 1)  # same size
    hub.graph = hostile(shipped, program, manifest=False)
    _, peer = refused_session(hub)
    assert isinstance(peer.finish.error, GraphRefused)
    assert "sha256" in peer.finish.error.reason
    assert any(isinstance(m, GraphRefusal) for m in peer.messages())


def test_another_torch_release_is_a_clear_error_on_both_sides(spec, monkeypatch) -> None:
    hub, _ = graph_hub(spec, workers=1)
    monkeypatch.setattr(worker_core, "torch_release", lambda: "2.13.0")
    _, peer = refused_session(hub)
    error = peer.finish.error
    assert isinstance(error, RejectedError) and error.code is RejectCode.TORCH_MISMATCH
    assert f"torch {TORCH}" in error.detail and "torch 2.13.0" in error.detail
    assert [m for m in peer.messages() if isinstance(m, Join)][0].torch == "2.13.0"
    refused = [e for e in hub.drain_events() if isinstance(e, ModelRefused)]
    assert len(refused) == 1 and refused[0].reason == error.detail


def test_a_welcome_from_another_release_is_refused_by_the_worker_too(spec) -> None:
    """Should a hub not check (an older one), the worker does, and tells it."""
    hub, _ = graph_hub(spec, workers=1)
    sim = Sim(hub)
    peer = sim.worker(b"w1", factory=GraphFactory(CPU))
    sim.run(lambda: peer.core.phase is worker_core.Phase.JOIN)
    welcome = Welcome(**{**msgspec.structs.asdict(_welcome(peer, sim)), "torch": "2.15.0"})
    peer.take(peer.core.replied(encode(welcome), sim.now))
    assert isinstance(peer.action, Goodbye)
    told = peer.action.send.message
    assert isinstance(told, GraphRefusal)
    assert "torch 2.15.0" in told.reason and f"torch {TORCH}" in told.reason


def _welcome(peer: Any, sim: Sim) -> Welcome:
    """The Welcome the hub gives ``peer`` (asked on its behalf)."""
    return only(send(sim.hub, peer.name, Join("w1", "cpu", TORCH), T0))
