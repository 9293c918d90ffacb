"""Every bad push is refused with its code, changes nothing, and training goes on unharmed."""

from __future__ import annotations

import logging
import math
from typing import Any, Callable

import msgspec
import numpy as np
import pytest
import torch
import zstandard
from helpers.hub import (T0, Worker, admit, full_round, grads, make_hub, only, reject_code, send,
                         send_frames, start_training, weights)
from helpers.protocol import HEAD

from computeshare_desktop.codec import get_codec
from computeshare_desktop.events import Rejected, RoundClosed
from computeshare_desktop.hub import HubCore
from computeshare_desktop.protocol import RejectCode, encode
from computeshare_desktop.protocol.messages import Ack, Bye, Push

NAN, INF = float("nan"), float("inf")


def push_frames(hub: HubCore, w: Worker, payload: bytes, **changes: Any) -> list[bytes]:
    msg = Push(token=w.token, version=hub.server.version, codec="raw", numel=hub.server.numel,
               loss=1.0, samples=8, steps=0, compute_ms=1.0, bandwidth=0.0)
    return encode(msgspec.structs.replace(msg, **changes), [payload, b""])


def good(hub: HubCore) -> bytes:
    return get_codec("raw").encode(grads(hub, 1, seed=99)[0])


def nan_grad(hub: HubCore, value: float) -> bytes:
    g = grads(hub, 1, seed=99)[0]
    g[hub.server.numel // 2] = value
    return get_codec("raw").encode(g)


def int8_payload(hub: HubCore, *, scale: float = 0.01, first: int = 1) -> bytes:
    """A well-sized int8 payload with one chosen scale and one chosen first value."""
    nblocks = -(-hub.server.numel // 128)
    scales = np.full(nblocks, 0.01, dtype="<f4")
    scales[-1] = scale
    values = np.ones(hub.server.numel, dtype=np.int8)
    values[0] = first
    return scales.tobytes() + values.tobytes()


def sparse(indices: list[int], values: list[float]) -> bytes:
    return np.array(indices, dtype="<u4").tobytes() + np.array(values, dtype="<f4").tobytes()


def half_with(hub: HubCore, codec: str, value: float) -> bytes:
    g = grads(hub, 1, seed=99)[0]
    g[7] = value
    data = bytearray(get_codec(codec).encode(g))
    if codec == "fp16" and not math.isfinite(value):  # fp16 encoding clamps: write the word
        data[14:16] = np.array([value], dtype="<f2").tobytes()
    return bytes(data)


def undeclared_bomb() -> bytes:
    cobj = zstandard.ZstdCompressor(level=1).compressobj()
    chunk = bytes(1 << 20)
    return b"".join(cobj.compress(chunk) for _ in range(64)) + cobj.flush()


# (name, frames builder, code, counted as a rejected push of this round)
BAD: list[tuple[str, Callable[[HubCore, Worker], list[bytes]], RejectCode, bool]] = [
    ("future version", lambda h, w: push_frames(h, w, good(h), version=1),
     RejectCode.BAD_VERSION, True),
    ("nan gradient", lambda h, w: push_frames(h, w, nan_grad(h, NAN)), RejectCode.NOT_FINITE, True),
    ("inf gradient", lambda h, w: push_frames(h, w, nan_grad(h, -INF)),
     RejectCode.NOT_FINITE, True),
    ("nan loss", lambda h, w: push_frames(h, w, good(h), loss=NAN), RejectCode.NOT_FINITE, True),
    ("inf loss", lambda h, w: push_frames(h, w, good(h), loss=INF), RejectCode.NOT_FINITE, True),
    ("numel too big", lambda h, w: push_frames(
        h, w, get_codec("raw").encode(torch.zeros(h.server.numel + 1)), numel=h.server.numel + 1),
     RejectCode.BAD_SHAPE, True),
    ("numel too small", lambda h, w: push_frames(
        h, w, get_codec("raw").encode(torch.zeros(h.server.numel - 1)), numel=h.server.numel - 1),
     RejectCode.BAD_SHAPE, True),
    ("payload short", lambda h, w: push_frames(h, w, good(h)[:-4]), RejectCode.BAD_SHAPE, True),
    ("zstd bomb declared", lambda h, w: push_frames(
        h, w, zstandard.ZstdCompressor(level=1).compress(bytes(64 << 20)), codec="zstd"),
     RejectCode.TOO_LARGE, True),
    ("zstd bomb undeclared", lambda h, w: push_frames(h, w, undeclared_bomb(), codec="zstd"),
     RejectCode.TOO_LARGE, True),
    ("zstd garbage", lambda h, w: push_frames(h, w, b"\x28\xb5\x2f\xfd" + b"\xff" * 64,
                                              codec="zstd"), RejectCode.BAD_CODEC, True),
    ("unknown codec", lambda h, w: push_frames(h, w, good(h), codec="pickle"),
     RejectCode.BAD_CODEC, True),
    ("zero samples", lambda h, w: push_frames(h, w, good(h), samples=0),
     RejectCode.MALFORMED, True),
    ("too many samples", lambda h, w: push_frames(h, w, good(h), samples=1_000_001),
     RejectCode.MALFORMED, True),
    ("int8 nan scale", lambda h, w: push_frames(h, w, int8_payload(h, scale=NAN), codec="int8"),
     RejectCode.NOT_FINITE, True),
    ("int8 inf scale", lambda h, w: push_frames(h, w, int8_payload(h, scale=INF), codec="int8"),
     RejectCode.NOT_FINITE, True),
    ("int8 negative scale", lambda h, w: push_frames(h, w, int8_payload(h, scale=-1.0),
                                                     codec="int8"), RejectCode.BAD_CODEC, True),
    ("int8 value -128", lambda h, w: push_frames(h, w, int8_payload(h, first=-128),
                                                 codec="int8"), RejectCode.BAD_CODEC, True),
    ("int8 short", lambda h, w: push_frames(h, w, int8_payload(h)[:-1], codec="int8"),
     RejectCode.BAD_SHAPE, True),
    ("topk index out of range", lambda h, w: push_frames(
        h, w, sparse([0, h.server.numel], [1.0, 1.0]), codec="topk"), RejectCode.BAD_INDEX, True),
    ("topk index repeated", lambda h, w: push_frames(h, w, sparse([4, 4], [1.0, 1.0]),
                                                     codec="topk"), RejectCode.BAD_INDEX, True),
    ("topk out of order", lambda h, w: push_frames(h, w, sparse([9, 4], [1.0, 1.0]),
                                                   codec="topk"), RejectCode.BAD_INDEX, True),
    ("topk nan value", lambda h, w: push_frames(h, w, sparse([1, 2], [1.0, NAN]), codec="topk"),
     RejectCode.NOT_FINITE, True),
    ("topk torn entry", lambda h, w: push_frames(h, w, sparse([1, 2], [1.0, 2.0])[:-3],
                                                 codec="topk"), RejectCode.BAD_SHAPE, True),
    ("fp16 nan", lambda h, w: push_frames(h, w, half_with(h, "fp16", NAN), codec="fp16"),
     RejectCode.NOT_FINITE, True),
    ("bf16 inf", lambda h, w: push_frames(h, w, half_with(h, "bf16", INF), codec="bf16"),
     RejectCode.NOT_FINITE, True),
    ("bf16 short", lambda h, w: push_frames(h, w, half_with(h, "bf16", 1.0)[:-2], codec="bf16"),
     RejectCode.BAD_SHAPE, True),
    ("local steps in a gradient session", lambda h, w: push_frames(h, w, good(h), steps=4),
     RejectCode.MALFORMED, True),
    ("inf bandwidth", lambda h, w: push_frames(h, w, good(h), bandwidth=INF),
     RejectCode.NOT_FINITE, True),
    ("frame over the cap", lambda h, w: push_frames(h, w, bytes(h.max_frame + 1)),
     RejectCode.TOO_LARGE, False),
    ("no binary frame", lambda h, w: push_frames(h, w, good(h))[:1], RejectCode.MALFORMED, False),
    ("garbage header", lambda h, w: [b"\x00garbage", good(h)], RejectCode.MALFORMED, False),
    ("not json", lambda h, w: [HEAD + b"{nope", good(h)], RejectCode.MALFORMED, False),
    ("other protocol", lambda h, w: [b"CS\x08" + push_frames(h, w, b"")[0][3:], good(h)],
     RejectCode.VERSION_MISMATCH, False),
    ("hub-only message", lambda h, w: encode(Ack(0)), RejectCode.MALFORMED, False),
    ("no frames at all", lambda h, w: [], RejectCode.MALFORMED, False),
    ("unknown token", lambda h, w: push_frames(h, w, good(h), token="ab" * 16),
     RejectCode.UNKNOWN_WORKER, False),
]


@pytest.mark.parametrize("name,build,code,counted", BAD, ids=[b[0] for b in BAD])
def test_bad_push_is_refused_and_training_goes_on(
        name: str, build: Callable[[HubCore, Worker], list[bytes]], code: RejectCode,
        counted: bool) -> None:
    hub = make_hub()
    w1, w2 = start_training(hub)
    before = weights(hub)
    hub.drain_events()
    replies = send_frames(hub, w1.peer, build(hub, w1), T0 + 0.1)
    reply = only(replies)  # the refusal, and nothing else
    assert reject_code(reply) is code, reply.detail
    assert reply.version == 0 and reply.retry_after == 0.0
    assert hub.server.version == 0
    assert torch.equal(weights(hub).view(torch.int32), before.view(torch.int32))  # bitwise
    assert hub.round.contributions == {}
    assert [e.code for e in hub.drain_events() if isinstance(e, Rejected)] == [code.value]
    assert hub.tick(T0 + 0.2) == [] and hub.server.version == 0
    # both workers are still members; a valid round closes normally
    g1, g2 = grads(hub, 2, seed=5)
    assert isinstance(only(w1.push(hub, T0 + 0.3, g1)), Ack)
    assert hub.server.version == 0
    assert isinstance(only(w2.push(hub, T0 + 0.4, g2)), Ack)
    assert hub.server.version == 1
    expected = before - hub.config.lr * 2 * (g1 + g2) / 2
    assert torch.allclose(weights(hub), expected, atol=1e-7, rtol=0)
    (event,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert (event.contributors, event.rejected) == (2, 1 if counted else 0)
    assert only(w1.ping(hub, T0 + 0.5)).version == 1
    assert [m.rejected for m in hub.members.members()] == [1 if counted else 0, 0]


def test_stale_push_gets_the_current_version_and_changes_nothing() -> None:
    hub = make_hub()
    w1, w2 = start_training(hub)
    full_round(hub, [w1, w2], T0 + 0.1)
    assert hub.server.version == 1
    before = weights(hub)
    reply = only(w1.push(hub, T0 + 0.2, grads(hub, 1)[0], version=0))
    assert reject_code(reply) is RejectCode.STALE and reply.version == 1
    assert "1" in reply.detail
    assert torch.equal(weights(hub), before) and hub.round.contributions == {}
    full_round(hub, [w1, w2], T0 + 0.3)
    assert hub.server.version == 2


def test_duplicate_push_does_not_close_the_round() -> None:
    hub = make_hub()
    w1, w2 = start_training(hub)
    before = weights(hub)
    g_first, g_again, g2 = grads(hub, 3, seed=21)
    assert isinstance(only(w1.push(hub, T0 + 0.1, g_first)), Ack)
    dup = only(w1.push(hub, T0 + 0.2, g_again))
    assert reject_code(dup) is RejectCode.DUPLICATE and dup.version == 0
    assert hub.server.version == 0  # two pushes from one worker are not a round of two
    assert torch.equal(weights(hub), before)
    assert list(hub.round.contributions) == [w1.welcome.shard]
    assert torch.equal(hub.round.contributions[w1.welcome.shard].grad, g_first)
    assert hub.tick(T0 + 1.0) == [] and hub.server.version == 0
    assert isinstance(only(w2.push(hub, T0 + 0.3, g2)), Ack)
    assert hub.server.version == 1
    # the first push counted, the duplicate did not replace it
    expected = before - hub.config.lr * 2 * (g_first + g2) / 2
    assert torch.allclose(weights(hub), expected, atol=1e-7, rtol=0)
    (event,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert (event.contributors, event.rejected) == (2, 1)


def test_a_shard_counts_once_per_round_even_after_a_rejoin() -> None:
    hub = make_hub()
    w1, w2 = start_training(hub)
    before = weights(hub)
    g1, g_again, g2 = grads(hub, 3, seed=4)
    assert isinstance(only(w1.push(hub, T0 + 0.1, g1)), Ack)
    assert isinstance(only(send(hub, w1.peer, Bye(w1.token), T0 + 0.2)), Ack)
    w3 = admit(hub, b"w3", T0 + 0.3)
    assert w3.welcome.shard == w1.welcome.shard  # same shard, so the same batch at version 0
    w3.pull(hub, T0 + 0.3)
    w3.push(hub, T0 + 0.4, g_again)
    w2.push(hub, T0 + 0.5, g2)
    assert hub.server.version == 1
    (event,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert event.contributors == 2
    expected = before - hub.config.lr * 2 * (g1 + g2) / 2
    assert torch.allclose(weights(hub), expected, atol=1e-7, rtol=0)


def test_a_push_cannot_claim_more_samples_than_a_batch() -> None:
    hub = make_hub(batch_size=8)
    w1, w2 = start_training(hub)
    g1, g2 = grads(hub, 2, seed=8)
    before = weights(hub)
    reply = only(w1.push(hub, T0 + 0.1, g1, samples=1_000_000))
    if isinstance(reply, Ack):  # accepted: then it must not outweigh an honest batch of 8
        w2.push(hub, T0 + 0.2, g2, samples=8)
        honest = before - hub.config.lr * 2 * (g1 + g2) / 2
        assert torch.allclose(weights(hub), honest, atol=1e-7, rtol=0)
    else:
        assert reject_code(reply) is RejectCode.MALFORMED


def test_a_flood_of_rejections_logs_one_summary_line_per_minute(caplog) -> None:
    hub = make_hub()
    caplog.set_level(logging.WARNING, logger="computeshare_desktop.hub.core")
    for i in range(200):
        hub.handle_pairing(b"flood", [b"garbage"], T0 + i * 0.01)  # 2 s of garbage
    lines = [r for r in caplog.records if "refused requests" in r.getMessage()]
    assert len(lines) == 1 and "1 × MALFORMED" in lines[0].getMessage()
    hub.handle_pairing(b"flood", [b"garbage"], T0 + 6.0)
    lines = [r.getMessage() for r in caplog.records if "refused requests" in r.getMessage()]
    assert len(lines) == 1  # held: the next summary a minute after the first
    hub.handle_pairing(b"flood", [b"garbage"], T0 + 61.0)
    lines = [r.getMessage() for r in caplog.records if "refused requests" in r.getMessage()]
    assert len(lines) == 2 and "201 × MALFORMED" in lines[1]
    rejected = [e for e in hub.drain_events() if isinstance(e, Rejected)]
    assert len(rejected) == 202  # every refusal is still an event: only the log is gated
