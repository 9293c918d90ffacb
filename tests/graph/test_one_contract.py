"""The hub's check of a model is the workers' own: one function on the same bytes.

``graph.contract.accept_parts`` is what a worker runs on the parts it fetched
(``worker.compute.GraphFactory``) and what the hub runs on the parts it is about to serve
(``hub.user_model.ship_model``), before any port opens. These tests show both sides call
that one function, on identical bytes, and that a rule anywhere on the worker's path
refuses the model on the hub too.
"""

from __future__ import annotations

import pytest
import torch
from helpers.graph import PLAIN, model_file
from helpers.hub import train_set

from computeshare_desktop.data import dataset_info
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.graph import GraphRefused, contract, loader
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.hub import user_model
from computeshare_desktop.hub.user_model import build_hub_model, ship_model
from computeshare_desktop.worker import compute


def test_the_hub_and_the_worker_call_the_same_function():
    assert user_model.accept_parts is contract.accept_parts
    assert compute.accept_parts is contract.accept_parts


def shipped_model(tmp_path, monkeypatch, calls: list):
    """Ship the PLAIN file model, recording every accept_parts call on either side."""
    real = contract.accept_parts

    def recording(parts, **kwargs):
        calls.append({name: bytes(data) for name, data in parts.items()})
        return real(parts, **kwargs)

    monkeypatch.setattr(user_model, "accept_parts", recording)
    monkeypatch.setattr(compute, "accept_parts", recording)
    config = HubConfig(model=model_file(tmp_path, PLAIN), workers=2, rounds=2)
    model = build_hub_model(config, dataset_info(config.dataset))
    return ship_model(model, config, train_set())


def test_the_hub_runs_the_check_on_the_bytes_it_serves(tmp_path, monkeypatch):
    calls: list = []
    shipped = shipped_model(tmp_path, monkeypatch, calls)
    assert shipped.graph is not None
    served = {name: bytes(data) for name, data in shipped.graph.parts.items()}
    assert calls == [served]


def test_a_rule_on_the_workers_rebuild_refuses_the_model_on_the_hub(tmp_path, monkeypatch):
    """Any refusal deep in the worker's loader (here: its rebuild) stops the hub first."""
    def refuse(*args, **kwargs):
        raise GraphRefused("a rule only the worker's rebuild has")

    monkeypatch.setattr(loader, "_rebuild", refuse)
    with pytest.raises(ConfigError, match="a rule only the worker's rebuild has"):
        shipped_model(tmp_path, monkeypatch, [])


def test_the_worker_accepts_what_the_hub_served(tmp_path, monkeypatch):
    calls: list = []
    shipped = shipped_model(tmp_path, monkeypatch, calls)
    assert shipped.graph is not None
    accepted = contract.accept_parts(shipped.graph.parts, hub_torch=torch.__version__,
                                     fingerprint=shipped.fingerprint)
    assert [p.shape for p in accepted.model.parameters] == \
        [p.shape for p in shipped.module.parameters()]
