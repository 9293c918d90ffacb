"""A model that every worker refuses, on the fake clock: the host is told at the last refusal
(AllRefused) and, once nobody else came for the grace period, told that too (RefusedWaitOver,
once); workers merely slow to come, or one that trained, never start it. A worker's refusal
reaches the host in its words: the layer of the node the worker names, why, the way out."""

from __future__ import annotations

import pytest
from helpers.graph import graph_hub, model_file
from helpers.hub import (T0, admit, fake_key, make_hub, only, pair, pair_start, reject_code,
                         send)

from computeshare_desktop.events import (AllRefused, ModelRefused, RefusedWaitOver, WorkerLeft,
                                         kinds)
from computeshare_desktop.hub.refusals import REFUSED_GRACE_S
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.protocol.messages import Ack, Bye, GraphRefusal, Join, Paired

GRACE = REFUSED_GRACE_S


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> str:
    return model_file(tmp_path_factory.mktemp("model"))


def refuse(hub, w, now: float, reason: str = "op aten.foo refused", where: str = "") -> None:
    assert isinstance(only(send(hub, w.peer, GraphRefusal(w.token, reason, where), now)), Ack)


def test_the_last_refusal_says_that_nobody_left_can_train_it() -> None:
    hub = make_hub(workers=2)
    w1, w2 = admit(hub, b"w1", T0), admit(hub, b"w2", T0)
    hub.drain_events()
    refuse(hub, w1, T0 + 1)
    first = hub.drain_events()
    assert len(kinds(first, ModelRefused)) == 1 and kinds(first, AllRefused) == []  # w2 is there
    refuse(hub, w2, T0 + 2, "no memory for it")
    events = hub.drain_events()
    assert [type(e) for e in events] == [WorkerLeft, ModelRefused, AllRefused]
    assert events[-1] == AllRefused(2, "w2", "no memory for it", GRACE)
    assert events[-1].who() == "all 2 workers that came"


def test_the_wait_ends_once_when_nobody_comes_and_each_arrival_restarts_it() -> None:
    hub = make_hub(workers=1)
    w1 = admit(hub, b"w1", T0)
    refuse(hub, w1, T0)
    assert kinds(hub.drain_events(), AllRefused) != []
    hub.tick(T0 + GRACE - 0.1)
    assert kinds(hub.drain_events(), RefusedWaitOver) == []
    pair_start(hub, b"late", T0 + 30)  # someone types the PIN: the wait starts again
    hub.tick(T0 + GRACE + 1)
    assert kinds(hub.drain_events(), RefusedWaitOver) == []
    hub.tick(T0 + 30 + GRACE)
    over = kinds(hub.drain_events(), RefusedWaitOver)
    assert over == [RefusedWaitOver(1, "w1", "op aten.foo refused", GRACE)]
    hub.tick(T0 + 30 + 3 * GRACE)
    assert kinds(hub.drain_events(), RefusedWaitOver) == []  # said once


def test_a_worker_that_joins_after_the_refusals_ends_the_wait() -> None:
    hub = make_hub(workers=2)
    refuse(hub, admit(hub, b"w1", T0), T0)
    admit(hub, b"w2", T0 + 5)
    hub.drain_events()
    hub.tick(T0 + 10 * GRACE)
    assert kinds(hub.drain_events(), RefusedWaitOver) == []


def test_no_word_while_a_worker_that_did_not_refuse_came() -> None:
    """One trained (or loads its data) and left: the model is not what keeps workers away."""
    hub = make_hub(workers=2)
    w1, w2 = admit(hub, b"w1", T0), admit(hub, b"w2", T0)
    assert isinstance(only(send(hub, w1.peer, Bye(w1.token), T0 + 1)), Ack)
    refuse(hub, w2, T0 + 2)
    hub.tick(T0 + 10 * GRACE)
    events = hub.drain_events()
    assert kinds(events, ModelRefused) != []
    assert kinds(events, AllRefused) == [] and kinds(events, RefusedWaitOver) == []


def test_workers_merely_slow_to_come_start_no_wait() -> None:
    hub = make_hub(workers=2)
    admit(hub, b"w1", T0)
    hub.tick(T0 + 10 * GRACE)  # w1 is silent by now and reaped: it never refused
    hub.tick(T0 + 20 * GRACE)
    events = hub.drain_events()
    assert kinds(events, AllRefused) == [] and kinds(events, RefusedWaitOver) == []


def test_machines_turned_away_at_the_door_count_as_refusals(spec) -> None:
    hub, _ = graph_hub(spec, workers=2)
    for i, peer in enumerate((b"old1", b"old2")):
        hub.allowlist.add(fake_key(peer), peer.decode())
        refusal = only(send(hub, peer, Join(peer.decode(), "cpu", "2.13.0"), T0 + i))
        assert reject_code(refusal) is RejectCode.TORCH_MISMATCH
    said = kinds(hub.drain_events(), AllRefused)
    assert [(e.workers, e.name) for e in said] == [(1, "old1"), (2, "old2")]
    assert "install torch" in said[-1].reason
    assert isinstance(pair(hub, b"new", T0 + GRACE), Paired)  # restarts the wait
    hub.tick(T0 + 1 + GRACE)
    assert kinds(hub.drain_events(), RefusedWaitOver) == []
    hub.tick(T0 + 2 * GRACE)
    assert [e.workers for e in kinds(hub.drain_events(), RefusedWaitOver)] == [2]


def test_a_workers_refusal_names_the_layer_of_its_node_and_the_way_out(spec) -> None:
    hub, shipped = graph_hub(spec, workers=1)
    node = next(n for n, layer in shipped.layers.items() if layer == "layer stem.0: nn.Conv2d")
    w = admit(hub, b"w1", T0)
    refuse(hub, w, T0, "op aten.foo is not allowed", where=node)
    (refused,) = kinds(hub.drain_events(), ModelRefused)
    assert refused.reason.startswith("layer stem.0: nn.Conv2d: op aten.foo is not allowed; ")
    assert "--device cpu" in refused.reason and "--offer-code" in refused.reason
    w = admit(hub, b"w2", T0)
    refuse(hub, w, T0, "tensor too big", where="no such node")  # a node it does not know
    (refused,) = kinds(hub.drain_events(), ModelRefused)
    assert refused.reason.startswith("tensor too big; ")
