"""WorkerCore against hand-written replies: garbage, the wrong message, every refusal, models
that do not fit its copy. A peer's bad input ends the session with a clear error (after the
goodbye once joined) or is survived; it never crashes the core."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from helpers.hub import HUB_KEY, make_hub
from worker_sim import Peer, Sim

from computeshare_desktop.codec import get_codec
from computeshare_desktop.codec.delta import FULL, weights_check
from computeshare_desktop.errors import (HubStoppedError, LocalProtocolError, RejectedError,
                                         RemoteProtocolError, RemovedError)
from computeshare_desktop.events import (HubStopped, PairingWait, Pushed, Rejoining, Resync,
                                         WorkerDone)
from computeshare_desktop.protocol import RejectCode, encode
from computeshare_desktop.protocol.messages import (Ack, Done, Join, Model, PairReply,
                                                    PairStart, Pong, Pull, Push, Reject,
                                                    ShardData, Welcome)
from computeshare_desktop.worker.core import Phase
from computeshare_desktop.worker.effects import Emit, Finish, Goodbye, Send, WaitUntil


def at(phase: Phase, **options: Any) -> tuple[Sim, Peer]:
    """A worker of a one-worker session whose next request (not sent yet) is ``phase``'s."""
    sim = Sim(make_hub(workers=1, rounds=1000, codec="raw"))
    peer = sim.worker(b"w1", **options)
    sim.run(lambda: peer.core.phase is phase and isinstance(peer.action, Send))
    return sim, peer


def reply(sim: Sim, peer: Peer, msg: Any, *frames: bytes) -> list:
    """Answer ``peer``'s request with ``msg``; the effects it returns."""
    effects = peer.core.replied(encode(msg, frames), sim.now)
    peer.take(effects)
    return effects


def reject(code: str, detail: str = "", version: int = -1, retry_after: float = 0.0) -> Reject:
    return Reject(code=code, detail=detail, version=version, retry_after=retry_after)


def model(numel: int, *, version: int = 3, base: int = FULL, check: str | None = None,
          batch: int = 8, steps: int = 0) -> tuple[Model, bytes, bytes]:
    weights = torch.linspace(-1, 1, numel)
    msg = Model(version=version, codec="raw", numel=numel, base=base,
                check=check or weights_check(weights), start=0, batch=batch, steps=steps,
                lr=0.1, momentum=0.0, push_codec="raw", topk=0.0)
    return msg, get_codec("raw").encode(weights), b""  # a built-in: no running statistics


def ended_with(peer: Peer, goodbye: bool) -> BaseException | None:
    """The error the core ended with; checks whether it said goodbye first."""
    assert peer.finish is not None, peer.action
    assert any(isinstance(e, Goodbye) for e in peer.effects) is goodbye
    return peer.finish.error


# ----------------------------------------------------------------- garbage and surprises
@pytest.mark.parametrize("phase,goodbye", [(Phase.JOIN, False), (Phase.PULL, True)])
def test_garbage_ends_with_a_remote_protocol_error(phase: Phase, goodbye: bool) -> None:
    sim, peer = at(phase)
    peer.take(peer.core.replied([b"not a frame of ours"], sim.now))
    if goodbye:
        peer.take(peer.core.said_goodbye(sim.now))
    error = ended_with(peer, goodbye)
    assert isinstance(error, RemoteProtocolError) and error.code is RejectCode.MALFORMED


def test_the_wrong_message_is_malformed() -> None:
    sim, peer = at(Phase.JOIN)
    reply(sim, peer, Pong(version=1, state="training"))
    error = ended_with(peer, False)
    assert isinstance(error, RejectedError) and error.code is RejectCode.MALFORMED
    assert error.detail == "unexpected reply Pong"


def test_done_ends_a_pull_normally_but_not_a_join() -> None:
    sim, peer = at(Phase.PULL)
    reply(sim, peer, Done(version=9))
    assert isinstance(peer.action, Goodbye)
    peer.take(peer.core.said_goodbye(sim.now))
    assert ended_with(peer, True) is None and isinstance(peer.events[-1], WorkerDone)
    sim, peer = at(Phase.JOIN)
    reply(sim, peer, Done(version=9))
    assert ended_with(peer, False).code is RejectCode.MALFORMED


def test_an_unknown_refusal_is_malformed_with_the_hubs_words() -> None:
    sim, peer = at(Phase.JOIN)
    reply(sim, peer, reject("NO_SUCH_CODE", "who knows"))
    error = ended_with(peer, False)
    assert isinstance(error, RejectedError) and error.code is RejectCode.MALFORMED
    assert error.detail == "who knows"


def test_a_welcome_without_a_shard_is_malformed() -> None:
    sim, peer = at(Phase.JOIN)
    w = Welcome(session_id="s", worker_id=1, token="t" * 32, shard=0, num_shards=1,
                shard_size=0, dataset="mnist-sample", model="simplenet", fingerprint="f",
                batch_size=8, seed=0, rounds=5, codec="raw", state="waiting", version=0,
                optimizer="sgd", weight_decay=0.0, label_smoothing=0.0, clip_grad=0.0,
                precision="fp32", compute="builtin", torch="2.14.1", channels=1, height=28,
                width=28, num_classes=10, mean=[0.5], std=[0.5])
    reply(sim, peer, w)
    assert ended_with(peer, False).code is RejectCode.MALFORMED


def test_a_shard_chunk_that_was_not_asked_for_is_malformed() -> None:
    sim, peer = at(Phase.SHARD)
    reply(sim, peer, ShardData(offset=5, total=10, image_shape=[1, 1, 28, 28]),
          bytes(784), bytes(8))
    peer.take(peer.core.said_goodbye(sim.now))
    error = ended_with(peer, True)
    assert error.code is RejectCode.MALFORMED and "shard chunk" in error.detail


def test_an_input_the_core_did_not_ask_for_is_a_local_error() -> None:
    sim, peer = at(Phase.PULL)
    with pytest.raises(LocalProtocolError):
        peer.core.woke(sim.now)


# ----------------------------------------------------------------- pairing
def test_busy_and_locked_out_wait_within_bounds_then_start_a_fresh_run() -> None:
    for code, retry_after, wait in (("BUSY", 1.0, 1.0), ("LOCKED_OUT", 0.1, 0.5),
                                    ("LOCKED_OUT", 1e6, 60.0)):
        sim, peer = at(Phase.PAIR_START)
        first = peer.action.message
        effects = reply(sim, peer, reject(code, retry_after=retry_after))
        assert effects == [Emit(PairingWait(code=code, retry_after=wait)),
                           WaitUntil(sim.now + wait)]
        sim.now += wait
        peer.take(peer.core.woke(sim.now))
        again = peer.action.message
        assert isinstance(again, PairStart) and again.msg_a != first.msg_a


def test_an_expired_run_starts_afresh_and_a_bad_spake_message_is_malformed() -> None:
    sim, peer = at(Phase.PAIR_FINISH)
    reply(sim, peer, reject("UNKNOWN_CHALLENGE"))
    assert isinstance(peer.action.message, PairStart) and peer.action.hub_key is None
    reply(sim, peer, PairReply(pair_id="p" * 32, msg_b="zz" * 33))
    error = ended_with(peer, False)
    assert isinstance(error, RemoteProtocolError) and error.code is RejectCode.MALFORMED


def test_a_refused_key_pairs_again_when_remembered_and_ends_otherwise() -> None:
    sim = Sim(make_hub(workers=1, rounds=1000))
    peer = sim.worker(b"w1", hub_key=HUB_KEY)
    peer.take(peer.core.key_refused(sim.now))
    assert isinstance(peer.action.message, PairStart)
    sim, peer = at(Phase.PULL)
    peer.take(peer.core.key_refused(sim.now))
    peer.take(peer.core.said_goodbye(sim.now))
    error = ended_with(peer, True)
    assert error.code is RejectCode.NOT_PAIRED and "does not allow" in error.detail


def test_a_stopped_hub_ends_a_join_without_a_goodbye() -> None:
    sim, peer = at(Phase.JOIN)
    reply(sim, peer, reject("HUB_STOPPED", version=12))
    assert isinstance(ended_with(peer, False), HubStoppedError)
    assert peer.events[-1] == HubStopped(version=12)


# ----------------------------------------------------------------- models
def test_a_model_of_another_size_is_bad_shape() -> None:
    sim, peer = at(Phase.PULL)
    reply(sim, peer, *model(7))
    peer.take(peer.core.said_goodbye(sim.now))
    assert ended_with(peer, True).code is RejectCode.BAD_SHAPE


@pytest.mark.parametrize("kind", ["unknown base", "bad check"])
def test_a_model_that_does_not_fit_the_copy_is_downloaded_whole(kind: str) -> None:
    sim, peer = at(Phase.PULL)
    numel = sim.hub.server.numel
    msg, data, stats = model(numel, version=8, base=5) if kind == "unknown base" else \
        model(numel, version=8, check="00000000")
    effects = reply(sim, peer, msg, data, stats)
    assert effects[0] == Emit(Resync(version=8))
    assert isinstance(effects[1].message, Pull) and effects[1].message.after == -1


def test_impossible_work_is_malformed() -> None:
    sim, peer = at(Phase.PULL)
    reply(sim, peer, *model(sim.hub.server.numel, batch=0))
    peer.take(peer.core.said_goodbye(sim.now))
    error = ended_with(peer, True)
    assert error.code is RejectCode.MALFORMED and "impossible work" in error.detail


# ----------------------------------------------------------------- pushes
@pytest.mark.parametrize("code,accepted", [
    ("DUPLICATE", True), ("STALE", False), ("NOT_TRAINING", False), ("NOT_FINITE", False),
    ("BAD_VERSION", False)])
def test_a_refused_push_is_counted_and_training_goes_on(code: str, accepted: bool) -> None:
    sim, peer = at(Phase.PUSH)
    before = (peer.core.pushed, peer.core.rejected)
    effects = reply(sim, peer, reject(code, version=50))
    pushed = effects[0].event
    assert isinstance(pushed, Pushed) and pushed.accepted is accepted
    assert (peer.core.pushed, peer.core.rejected) == (before[0] + accepted,
                                                      before[1] + (not accepted))
    assert isinstance(effects[1].message, Pull)


def test_another_refusal_of_a_push_ends_the_session() -> None:
    sim, peer = at(Phase.PUSH)
    reply(sim, peer, reject("BAD_SHAPE", "no"))
    peer.take(peer.core.said_goodbye(sim.now))
    assert ended_with(peer, True).code is RejectCode.BAD_SHAPE


def test_a_forgotten_worker_joins_again_unless_it_is_leaving() -> None:
    sim, peer = at(Phase.PUSH)
    effects = reply(sim, peer, reject("UNKNOWN_WORKER"))
    assert effects[0] == Emit(Rejoining()) and isinstance(effects[1].message, Join)
    sim, peer = at(Phase.PUSH)
    peer.core.leave()
    token = peer.core.token
    effects = reply(sim, peer, reject("UNKNOWN_WORKER"))
    assert effects[0] == Emit(Rejoining()) and isinstance(effects[1], Goodbye)
    assert effects[1].send.message.token == token


def test_measured_transfers_set_the_bandwidth_a_push_reports() -> None:
    sim, peer = at(Phase.SHARD)
    n = 200  # 156,800 bytes of images in 0.5 s
    sim.now += 0.5
    reply(sim, peer, ShardData(offset=0, total=n, image_shape=[n, 1, 28, 28]),
          bytes(784 * n), bytes(8 * n))
    assert peer.core.link.rate == pytest.approx((784 + 8) * n / 0.5)
    sim.run(lambda: isinstance(peer.action, Send) and isinstance(peer.action.message, Push))
    assert peer.action.message.bandwidth == pytest.approx(peer.core.link.rate)
    reply(sim, peer, Ack(version=1))
    assert peer.core.pushed == 1


def test_a_finished_core_takes_no_more_input() -> None:
    sim, peer = at(Phase.JOIN)
    reply(sim, peer, reject("BANNED"))
    assert isinstance(peer.action, Finish)
    with pytest.raises(LocalProtocolError):
        peer.core.replied(encode(Done(version=1)), sim.now)


@pytest.mark.parametrize("code, blocked", [("BANNED", False), ("BLOCKED", True)])
def test_a_removed_or_blocked_worker_ends_and_hears_which(code: str, blocked: bool) -> None:
    """Either code ends the worker's session (RemovedError: exit 8, no retry) and says
    which it is (the Join dialog tells the two apart)."""
    sim, peer = at(Phase.JOIN)
    reply(sim, peer, reject(code))
    assert isinstance(peer.action, Finish) and isinstance(peer.action.error, RemovedError)
    assert peer.action.error.blocked is blocked
    assert ("blocked" in str(peer.action.error)) is blocked
