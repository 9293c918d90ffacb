"""A model the hub offers as Python code (``--offer-code``): a worker runs it only once its
person approved that exact sha256 for that hub key. In-process cores on the fake clock;
the model file marks every process that imports it (a canary), so a refusal is proven to
have run nothing."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers.graph import CANARY, graph_hub
from helpers.hub import HUB_KEY
from worker_sim import Sim

from computeshare_desktop.events import ModelReceived, ModelRefused
from computeshare_desktop.protocol.messages import GraphRefusal, Shard
from computeshare_desktop.worker import (CodeApprovals, CodeFactory, CodeNotApproved,
                                         ModelFactory, WithCode)

CPU = torch.device("cpu")

# Data-dependent control flow: torch.export cannot make a graph of it.
BRANCHY = '''
import os
import uuid
from pathlib import Path

import torch.nn.functional as F
from torch import nn

if os.environ.get("CS_TEST_CANARY_DIR"):
    Path(os.environ["CS_TEST_CANARY_DIR"], uuid.uuid4().hex).write_text("x")


class Net(nn.Module):
    def __init__(self, num_classes, in_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 4, 5, stride=2)
        self.norm = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 12 * 12, num_classes)

    def forward(self, x):
        x = F.relu(self.norm(self.conv(x))).flatten(1)
        if x.sum() > 0:
            x = x * 2
        return self.fc(x)
'''


@pytest.fixture()
def branchy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """The model file's spec, and the folder its canary writes to (empty until a worker
    imports it; the hub's own import happens before the canary is armed)."""
    path = tmp_path / "branchy.py"
    path.write_text(BRANCHY, encoding="utf-8")
    return f"{path}:Net", tmp_path / "canary"


def code_hub(spec: str, canary: Path, monkeypatch: pytest.MonkeyPatch, **overrides: Any):
    hub, shipped = graph_hub(spec, offer_code=True, **overrides)
    canary.mkdir()
    monkeypatch.setenv(CANARY, str(canary))  # armed after the hub built its model
    return hub, shipped


def factory(approvals: CodeApprovals, trust: str = "", key: str | None = HUB_KEY) -> WithCode:
    return WithCode(ModelFactory(CPU), CodeFactory(CPU, approvals, lambda: key, trust=trust))


def run(hub: Any, *factories: WithCode) -> list[Any]:
    sim = Sim(hub)
    peers = [sim.worker(f"w{i}".encode(), factory=f) for i, f in enumerate(factories, 1)]
    sim.finish_all()
    return peers


def test_unapproved_code_is_refused_the_hub_told_and_nothing_runs(branchy, monkeypatch):
    spec, canary = branchy
    hub, shipped = code_hub(spec, canary, monkeypatch, workers=1)
    sha = shipped.graph.manifest.program_sha256
    [peer] = run(hub, factory(CodeApprovals(None)))
    error = peer.finish.error
    assert isinstance(error, CodeNotApproved) and error.sha256 == sha
    assert error.hub_key == HUB_KEY and error.model == "branchy.py:Net"
    assert f"--trust-code {sha}" in str(error) and "approve it in the app" in str(error)
    told = [m for m in peer.messages() if isinstance(m, GraphRefusal)]
    assert len(told) == 1 and sha in told[0].reason
    assert not any(isinstance(m, Shard) for m in peer.messages())
    refused = [e for e in hub.drain_events() if isinstance(e, ModelRefused)]
    assert len(refused) == 1 and sha in refused[0].reason
    assert list(canary.iterdir()) == []


def test_approved_code_runs_and_trains(branchy, monkeypatch, tmp_path):
    spec, canary = branchy
    hub, shipped = code_hub(spec, canary, monkeypatch, rounds=3, codec="raw")
    m = shipped.graph.manifest
    assert m.code is not None and m.code.label == "branchy.py:Net" and m.op_count == 0
    before = [t.clone() for t in shipped.stat_buffers()]
    approvals = CodeApprovals(tmp_path / "approved-code.json")
    approvals.approve(HUB_KEY, m.program_sha256, m.model)
    peers = run(hub, factory(approvals), factory(approvals))
    assert hub.done and hub.server.version == 3
    for peer in peers:
        assert peer.finish.error is None, peer.finish.error
        assert peer.of_kind(ModelReceived) == [ModelReceived(
            "branchy.py:Net", hub.server.numel, 0, f"code approved ({m.program_sha256[:12]})")]
    assert len(list(canary.iterdir())) == 2  # each worker imported the approved file once
    after = shipped.stat_buffers()
    assert all(not torch.equal(a, b) for a, b in zip(after, before, strict=True))


def test_another_hash_or_another_hub_key_is_refused(branchy, monkeypatch):
    spec, canary = branchy
    hub, shipped = code_hub(spec, canary, monkeypatch, workers=2)
    sha = shipped.graph.manifest.program_sha256
    other_sha = "0" * 64
    elsewhere = CodeApprovals(None)
    elsewhere.approve("another hub's key", sha)  # the right file, from another hub
    other_file = CodeApprovals(None)
    other_file.approve(HUB_KEY, other_sha)  # this hub, another file
    peers = run(hub, factory(elsewhere), factory(other_file))
    for peer in peers:
        assert isinstance(peer.finish.error, CodeNotApproved)
    assert list(canary.iterdir()) == []


def test_trust_code_must_be_the_offered_hash(branchy, monkeypatch):
    spec, canary = branchy
    hub, shipped = code_hub(spec, canary, monkeypatch, workers=1)
    sha = shipped.graph.manifest.program_sha256
    [peer] = run(hub, factory(CodeApprovals(None), trust="ab" * 32))
    error = peer.finish.error
    assert isinstance(error, CodeNotApproved) and error.trusted == "ab" * 32
    assert sha in error.reason and "ab" * 32 in error.reason
    assert list(canary.iterdir()) == []


def test_trust_code_approves_for_this_hub_and_is_remembered(branchy, monkeypatch, tmp_path):
    spec, canary = branchy
    path = tmp_path / "approved-code.json"
    hub, shipped = code_hub(spec, canary, monkeypatch, workers=1, rounds=2)
    sha = shipped.graph.manifest.program_sha256
    [peer] = run(hub, factory(CodeApprovals(path), trust=sha.upper()))
    assert peer.finish.error is None, peer.finish.error
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert [(a["hub_key"], a["sha256"], a["model"]) for a in saved["approved"]] == [
        (HUB_KEY, sha, "branchy.py:Net")]
    # the next session (a new store read from the file, no --trust-code) runs it at once
    hub2, _ = graph_hub(spec, offer_code=True, workers=1, rounds=2)
    [again] = run(hub2, factory(CodeApprovals(path)))
    assert again.finish.error is None, again.finish.error
    # but not for another hub's key
    hub3, _ = graph_hub(spec, offer_code=True, workers=1, rounds=2)
    [other] = run(hub3, factory(CodeApprovals(path), key="another hub's key"))
    assert isinstance(other.finish.error, CodeNotApproved)


def test_a_worker_without_the_code_factory_refuses_code(branchy, monkeypatch):
    """The plain ModelFactory (a graph's checks) never runs code: the source is no graph."""
    spec, canary = branchy
    hub, _ = code_hub(spec, canary, monkeypatch, workers=1)
    [peer] = run(hub, ModelFactory(CPU))
    assert peer.finish.error is not None
    assert any(isinstance(m, GraphRefusal) for m in peer.messages())
    assert list(canary.iterdir()) == []


def test_approvals_survive_a_bad_file_and_check_their_input(tmp_path):
    path = tmp_path / "approved-code.json"
    path.write_text("not json", encoding="utf-8")
    store = CodeApprovals(path)
    assert not store.approved(HUB_KEY, "a" * 64)
    store.approve(HUB_KEY, "A" * 64, "net.py:Net")
    assert CodeApprovals(path).approved(HUB_KEY, "a" * 64)
    with pytest.raises(ValueError):
        store.approve(HUB_KEY, "not a hash")


def test_frozen_batchnorm_keeps_its_statistics_in_code_as_in_a_graph(branchy, monkeypatch,
                                                                       tmp_path):
    """--train-only fc: the frozen BatchNorm runs in eval mode on the workers (as a graph's
    does), so the hub's statistics stay as built while the head trains."""
    spec, canary = branchy
    hub, shipped = code_hub(spec, canary, monkeypatch, rounds=3, codec="raw", train_only="fc")
    m = shipped.graph.manifest
    assert m.trainable == ["fc.weight", "fc.bias"]
    before = [t.clone() for t in shipped.stat_buffers()]
    approvals = CodeApprovals(tmp_path / "approved-code.json")
    approvals.approve(HUB_KEY, m.program_sha256, m.model)
    peers = run(hub, factory(approvals), factory(approvals))
    assert hub.done and all(p.finish.error is None for p in peers)
    assert all(torch.equal(a, b) for a, b in zip(shipped.stat_buffers(), before, strict=True))


@pytest.mark.parametrize("text, said", [
    ('{"version": 1, "approved": [{"hub_key": "K", "sha256": 5}]}',
     "Expected `str`, got `int` - at `$.approved[0].sha256`"),
    ('{"version": 1, "approved": {"K": "a"}}', "Expected `array`, got `object`"),
    ("not json", "JSON is malformed")])
def test_a_damaged_approvals_file_approves_nothing_says_why_and_is_kept(tmp_path, caplog,
                                                                       text, said):
    path = tmp_path / "approved-code.json"
    path.write_text(text, encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert not CodeApprovals(path).approved("K", "a" * 64)
    assert said in caplog.text
    kept = tmp_path.glob("approved-code.json.damaged-*")
    assert [p.read_text(encoding="utf-8") for p in kept] == [text]


def test_an_approvals_file_written_before_reads_as_it_did(tmp_path):
    path = tmp_path / "approved-code.json"
    path.write_text(json.dumps({"version": 1, "approved": [
        {"hub_key": HUB_KEY, "sha256": "b" * 64, "model": "net.py:Net",
         "approved_at": "2026-12-01T10:00:00Z"}]}, indent=1), encoding="utf-8")
    store = CodeApprovals(path)
    assert store.approved(HUB_KEY, "b" * 64) and not store.approved("other", "b" * 64)
    path.write_text(json.dumps({"version": 2, "approved": []}), encoding="utf-8")
    assert not CodeApprovals(path).approved(HUB_KEY, "b" * 64)  # a newer format: none
    assert not list(tmp_path.glob("*.damaged-*"))
