"""The hub core shipping a model as a graph: the Welcome says so, the parts are served by
byte ranges, the torch release is checked at the door, a refusal is heard, and the running
statistics travel both ways and are combined."""

from __future__ import annotations

import json

import pytest
import torch
from helpers.graph import graph_hub, model_file
from helpers.hub import (T0, TORCH, admit, fake_key, grads, make_hub, only, reject_code, send,
                         send_frames, start_training)
from helpers.protocol import HEAD

from computeshare_desktop.events import ModelRefused, WorkerLeft
from computeshare_desktop.graph import torch_release
from computeshare_desktop.hub import core as hub_core
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.graphs import decode_manifest, stats_frame
from computeshare_desktop.protocol.messages import (Ack, GraphData, GraphGet, GraphRefusal, Join,
                                                    Model)


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> str:
    return model_file(tmp_path_factory.mktemp("model"))


def fetch(hub, w, part: str) -> bytes:
    """A part as a worker fetches it, range by range."""
    data, total = b"", None
    while total is None or len(data) < total:
        (out,) = send(hub, w.peer, GraphGet(w.token, part, len(data)), T0)
        assert isinstance(out.msg, GraphData) and out.msg.offset == len(data), out.msg
        assert len(out.body[0]) <= hub_core.MAX_GRAPH_CHUNK_BYTES
        total = out.msg.total
        data += bytes(out.body[0])
    return data


def test_the_welcome_says_graph_and_the_parts_come_in_ranges(spec, monkeypatch) -> None:
    hub, shipped = graph_hub(spec)
    w = admit(hub, b"w1", T0)
    assert (w.welcome.compute, w.welcome.torch) == ("graph", torch_release())
    assert w.welcome.fingerprint == shipped.fingerprint == hub.fingerprint
    assert w.welcome.model == "stranger.py:Net"  # the label: the hub's paths stay its own
    monkeypatch.setattr(hub_core, "MAX_GRAPH_CHUNK_BYTES", 1000)
    for part in ("manifest", "program", "state"):
        assert fetch(hub, w, part) == shipped.graph.part(part), part
    manifest = decode_manifest(shipped.graph.part("manifest"))
    assert manifest.stats == [n for n in manifest.stats if n.endswith(("_mean", "_var"))]
    assert len(manifest.stats) == 2 * 5  # five BatchNorms: mean and variance each
    total = len(shipped.graph.part("program"))
    for offset in (total, 2**40):
        refusal = only(send(hub, w.peer, GraphGet(w.token, "program", offset), T0))
        assert reject_code(refusal) is RejectCode.BAD_RANGE
    negative = HEAD + json.dumps({"t": "graph_get", "token": w.token, "part": "program",
                                  "offset": -1}).encode()
    assert reject_code(only(send_frames(hub, w.peer, [negative], T0))) is RejectCode.MALFORMED


def test_a_built_in_session_ships_no_graph() -> None:
    hub = make_hub()
    w = admit(hub, b"w1", T0)
    assert (w.welcome.compute, w.welcome.model) == ("builtin", "simplenet")
    refusal = only(send(hub, w.peer, GraphGet(w.token, "manifest", 0), T0))
    assert reject_code(refusal) is RejectCode.BAD_RANGE


def test_another_torch_release_is_refused_at_the_door_naming_both(spec) -> None:
    hub, _ = graph_hub(spec)
    admit(hub, b"w1", T0)
    hub.allowlist.add(fake_key(b"old"), "old")
    refusal = only(send(hub, b"old", Join("old", "cpu", "2.13.0+cu121"), T0))
    assert reject_code(refusal) is RejectCode.TORCH_MISMATCH
    assert f"torch {TORCH}" in refusal.detail and "torch 2.13.0" in refusal.detail
    refused = [e for e in hub.drain_events() if isinstance(e, ModelRefused)]
    assert refused == [ModelRefused("old", refusal.detail)]
    assert len(hub.members) == 1
    builtin = make_hub()
    builtin.allowlist.add(fake_key(b"old"), "old")
    assert only(send(builtin, b"old", Join("old", "cpu", "2.13.0"), T0)).compute == "builtin"


def test_a_refused_graph_frees_the_shard_and_says_why(spec) -> None:
    hub, _ = graph_hub(spec)
    w = admit(hub, b"w1", T0)
    hub.drain_events()
    assert isinstance(only(send(hub, w.peer, GraphRefusal(w.token, "op aten.foo refused"), T0)),
                      Ack)
    events = hub.drain_events()
    left = [e for e in events if isinstance(e, WorkerLeft)]
    assert [e.reason for e in left] == ["model_refused"]
    refused = [e for e in events if isinstance(e, ModelRefused)]
    assert [e.name for e in refused] == ["w1"]  # in the hub's words: why, then the way out
    assert refused[0].reason.startswith("op aten.foo refused; ")
    assert len(hub.members) == 0 and admit(hub, b"w2", T0).welcome.shard == w.welcome.shard


def test_running_statistics_travel_both_ways_and_are_averaged_by_samples(spec) -> None:
    hub, shipped = graph_hub(spec, workers=2, batch_size=8, codec="raw")
    w1, w2 = start_training(hub)
    stats = shipped.stat_buffers()
    numel = hub.server.stats_numel
    assert numel == sum(t.numel() for t in stats) > 0
    (out,) = w1.pull(hub, T0)
    assert isinstance(out.msg, Model)
    assert bytes(out.body[1]) == stats_frame(torch.cat([t.flatten() for t in stats]))
    before = torch.cat([t.flatten() for t in stats]).clone()
    counters = shipped.counters()
    assert len(counters) == 5 and all(int(c) == 0 for c in counters)
    change1, change2 = torch.full((numel,), 0.4), torch.full((numel,), -0.2)
    g1, g2 = grads(hub, 2)
    w1.push(hub, T0, g1, samples=6, stats=stats_frame(change1))
    w2.push(hub, T0, g2, samples=2, stats=stats_frame(change2))
    assert hub.server.version == 1
    after = torch.cat([t.flatten() for t in stats])
    assert torch.allclose(after - before, torch.full((numel,), 0.4 * 6 / 8 - 0.2 * 2 / 8))
    assert all(int(c) == 1 for c in counters)  # the global steps, as one process counts them
    assert bytes(w1.pull(hub, T0, after=0)[0].body[1]) == stats_frame(after)


@pytest.mark.parametrize("stats,code", [(b"", RejectCode.BAD_SHAPE),
                                        (b"\0" * 4, RejectCode.BAD_SHAPE),
                                        (None, RejectCode.NOT_FINITE)])
def test_statistics_of_the_wrong_size_or_not_finite_are_refused(spec, stats, code) -> None:
    hub, _ = graph_hub(spec, workers=1, codec="raw")
    (w,) = start_training(hub)
    if stats is None:
        stats = stats_frame(torch.full((hub.server.stats_numel,), float("nan")))
    assert reject_code(only(w.push(hub, T0, grads(hub, 1)[0], stats=stats))) is code
    assert hub.server.version == 0


def test_a_built_in_session_refuses_statistics() -> None:
    hub = make_hub(workers=1, codec="raw")
    (w,) = start_training(hub)
    refusal = only(w.push(hub, T0, grads(hub, 1)[0], stats=b"\0" * 8))
    assert reject_code(refusal) is RejectCode.BAD_SHAPE
