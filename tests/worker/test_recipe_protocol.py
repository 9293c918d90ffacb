"""The recipe on the wire (protocol 4): the Welcome carries it in words the protocol bounds,
the worker core refuses an impossible one before downloading its shard, a worker of another
protocol version gets VERSION_MISMATCH, and a whole session (both sans-I/O cores, a real
compute) trains with the hub's recipe."""

from __future__ import annotations

import json

import msgspec
import pytest
import torch
from helpers.hub import make_hub, pair_start
from helpers.protocol import EXAMPLES, HEAD, example_frames
from worker_sim import Sim

from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.protocol import MsgType, RejectCode, decode, encode
from computeshare_desktop.protocol.messages import PairStart, Reject, Shard
from computeshare_desktop.protocol.wire import MAGIC, PROTOCOL_VERSION
from computeshare_desktop.worker import BuiltinFactory, GradientComputer
from computeshare_desktop.worker.core import Phase
from computeshare_desktop.worker.effects import Send

WELCOME = EXAMPLES[MsgType.WELCOME]


def welcome_frames(**fields: object) -> list[bytes]:
    obj = {"t": "welcome", **msgspec.to_builtins(WELCOME), **fields}
    return [HEAD + json.dumps(obj).encode()]


@pytest.mark.parametrize("field,value", [("optimizer", "adam"), ("optimizer", "SGD"),
                                         ("precision", "fp8"), ("precision", 16),
                                         ("label_smoothing", "0.1"), ("clip_grad", None)])
def test_a_recipe_word_the_protocol_does_not_know_is_malformed(field: str, value: object):
    with pytest.raises(RemoteProtocolError) as info:
        decode(welcome_frames(**{field: value}))
    assert info.value.code is RejectCode.MALFORMED and field in info.value.detail
    assert decode(welcome_frames())[0] == WELCOME


def test_an_impossible_recipe_is_refused_before_the_shard() -> None:
    sim = Sim(make_hub(workers=1, rounds=10, codec="raw"))
    peer = sim.worker(b"w1")
    sim.run(lambda: peer.core.phase is Phase.JOIN and isinstance(peer.action, Send))
    bad = msgspec.structs.replace(WELCOME, label_smoothing=float("nan"))
    peer.take(peer.core.replied(encode(bad), sim.now))  # not joined: no goodbye to say
    assert peer.finish is not None and peer.finish.error is not None
    assert peer.finish.error.code is RejectCode.MALFORMED  # type: ignore[attr-defined]
    assert "recipe" in str(peer.finish.error)
    assert not peer.messages(Shard)


def test_a_worker_of_another_protocol_version_is_told_so() -> None:
    hub = make_hub()
    _, reply = pair_start(hub, b"w1", 1000.0)  # a worker of our version pairs as usual
    assert not isinstance(reply, Reject)
    frames = encode(PairStart(msg_a="41" + "00" * 32, name="old"))
    old = [MAGIC + bytes([PROTOCOL_VERSION - 1]) + frames[0][3:]]  # the last protocol's header
    answer = decode(hub.handle_pairing(b"w2", old, 1000.0, "lan/w2")[0].frames)[0]
    assert isinstance(answer, Reject) and answer.code == RejectCode.VERSION_MISMATCH.value
    assert f"protocol {PROTOCOL_VERSION - 1}, we speak {PROTOCOL_VERSION}" in answer.detail
    assert "same ComputeShare" in answer.detail
    # ... and a worker of ours that hears an older hub ends with the same code
    sim = Sim(make_hub(workers=1))
    peer = sim.worker(b"w3")
    sim.run(lambda: peer.core.phase is Phase.JOIN and isinstance(peer.action, Send))
    welcome = encode(WELCOME)[0]
    peer.take(peer.core.replied([MAGIC + bytes([PROTOCOL_VERSION - 1]) + welcome[3:]], sim.now))
    assert peer.finish is not None
    error = peer.finish.error
    assert isinstance(error, RemoteProtocolError) and error.code is RejectCode.VERSION_MISMATCH


def test_a_session_trains_with_the_hubs_recipe_and_keeps_adamw_across_rounds() -> None:
    """Both cores and a real compute: 4 rounds of 2 local AdamW steps with label smoothing;
    the worker's AdamW, built from the Welcome, stepped 8 times in all (its state carried
    from round to round)."""
    torch.manual_seed(0)
    hub = make_hub(workers=1, rounds=8, local_steps=2, optimizer="adamw", lr=0.002,
                   label_smoothing=0.1, weight_decay=0.01, clip_grad=5.0, codec="raw",
                   batch_size=16)
    sim = Sim(hub)
    peer = sim.worker(b"w1", factory=BuiltinFactory(torch.device("cpu")))
    before = hub.server.flat()
    sim.finish_all()
    assert peer.finish is not None and peer.finish.error is None, peer.finish
    compute = peer.compute
    assert isinstance(compute, GradientComputer)
    assert (compute.recipe.optimizer, compute.recipe.label_smoothing) == ("adamw", 0.1)
    assert compute.recipe.clip_grad == 5.0 and compute.precision.name == "fp32"
    assert compute.adamw is not None
    assert {int(s["step"]) for s in compute.adamw.state.values()} == {8}
    assert compute.adamw.param_groups[0]["weight_decay"] == 0.01
    assert hub.server.version == 8 and not torch.equal(hub.server.flat(), before)


def test_the_example_welcome_round_trips() -> None:
    frames = example_frames(MsgType.WELCOME)
    assert decode(frames)[0].optimizer == "adamw"
