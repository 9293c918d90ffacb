"""The h11 invariant for the hub: whatever a peer sends, ``handle`` answers with valid frames.

One hub lives through every example (two members training, a third pairing), and each example
mutates a valid request: a field replaced by any JSON value (lone surrogates included), header
bytes flipped, binary frames replaced. ``handle`` and ``tick`` must never raise, every reply
must decode, the version only moves forward and the weights stay finite.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import torch
from helpers_hub import (T0, admit, auth_message, challenge, decode_replies, grads, make_hub, only,
                         reject_code, send, start_training)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computeshare_desktop.codec import get_codec
from computeshare_desktop.hub import HubCore
from computeshare_desktop.protocol import RejectCode, encode
from computeshare_desktop.protocol.messages import Ack, Bye, Hello, Ping, Pull, Push, Reject, Shard

FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# text that JSON can carry but UTF-8 cannot: st.text() draws lone surrogates only rarely
any_text = (st.text(st.characters(categories=["Cs", "L", "N", "P", "S", "Z", "Cc"]), max_size=12)
            | st.sampled_from(["\ud800", "w\udfff", "\udc80" * 3]))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | any_text
    | st.sampled_from([-1, 0, 2**53, 21_840, 1_000_001, "raw", "zstd", "x" * 300]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=6,
)


class Harness:
    """A long-lived hub and its workers; rejoins whoever a mutation made leave."""

    def __init__(self) -> None:
        self.hub: HubCore = make_hub(rounds=10**6, heartbeat_timeout_s=1e6, long_poll_ms=50)
        self.now = T0
        self.workers = [admit(self.hub, b"w%d" % i, self.now) for i in (1, 2)]
        for w in self.workers:
            w.pull(self.hub, self.now)
        self.grad = get_codec("raw").encode(grads(self.hub, 1)[0])

    def heal(self) -> None:
        # the fuzzer's wrong PINs would lock pairing, and a locked hub never checks a proof
        self.hub.pairing.lockout.succeeded()
        tokens = {m.token for m in self.hub.members.members()}
        for i, w in enumerate(self.workers):
            if w.token not in tokens:
                self.workers[i] = admit(self.hub, w.peer, self.now)
                self.workers[i].pull(self.hub, self.now)

    def templates(self) -> list[tuple[Any, list[bytes]]]:
        hub, w = self.hub, self.workers[0]
        ch, nonce = challenge(hub, b"pairing", self.now)
        return [
            (Hello(client_nonce="n"), []),
            (auth_message(ch, nonce, name="fuzz"), []),
            (Shard(w.token, 0, 10), []),
            (Pull(w.token, hub.server.version - 1, 10, hub.fingerprint), []),
            (Push(w.token, hub.server.version, "raw", hub.server.numel, 1.0, 8, 1.0),
             [self.grad]),
            (Ping(w.token), []),
            (Bye(w.token), []),
        ]


HARNESS: Harness | None = None


def harness() -> Harness:
    global HARNESS
    if HARNESS is None:
        HARNESS = Harness()
    HARNESS.heal()
    return HARNESS


def check(h: Harness, peer: bytes, frames: list[bytes]) -> None:
    version, before = h.hub.server.version, h.hub.server.flat()
    h.now += 0.01
    replies = decode_replies(h.hub.handle(peer, frames, h.now))  # raises on any bad reply
    mine = [o for o in replies if o.peer == peer]
    assert len(mine) <= 1
    for o in mine:
        if isinstance(o.msg, Reject):
            RejectCode(o.msg.code)  # a known code
    decode_replies(h.hub.tick(h.now))
    assert h.hub.server.version >= version
    after = h.hub.server.flat()
    assert bool(torch.isfinite(after).all())
    if h.hub.server.version == version:
        assert torch.equal(after, before)


@FUZZ
@given(st.integers(0, 6), st.data())
def test_mutated_fields(which: int, data: st.DataObject) -> None:
    h = harness()
    msg, body = h.templates()[which]
    obj = {"t": msg.TYPE.value, **dataclasses.asdict(msg)}
    name = data.draw(st.sampled_from(sorted(obj)))
    obj[name] = data.draw(any_text | json_values if type(obj[name]) is str else json_values)
    header = b"CS\x01" + json.dumps(obj).encode()
    check(h, b"fuzz", [header, *body])


@FUZZ
@given(st.integers(0, 6), st.data())
def test_flipped_header_bytes_and_replaced_bodies(which: int, data: st.DataObject) -> None:
    h = harness()
    msg, body = h.templates()[which]
    head = bytearray(encode(msg, body)[0])
    for _ in range(data.draw(st.integers(0, 3))):
        # positions drawn independently of the header's length, which depends on hub state
        head[data.draw(st.integers(0, 4095)) % len(head)] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        body = data.draw(st.lists(st.binary(max_size=300), max_size=3))
    check(h, data.draw(st.sampled_from([b"fuzz", b"w1", b""])), [bytes(head), *body])


def test_a_push_with_fields_at_their_extremes() -> None:
    hub = make_hub()
    w1, w2 = start_training(hub)
    grad = get_codec("raw").encode(grads(hub, 1)[0])
    msg = Push(w1.token, 0, "raw", hub.server.numel, 1.0, 8, 1.0)
    for changes, code in (({"samples": 2**53}, RejectCode.MALFORMED),
                          ({"samples": -(2**53)}, RejectCode.MALFORMED),
                          ({"version": -(2**53)}, RejectCode.STALE),
                          ({"version": 2**53}, RejectCode.BAD_VERSION),
                          ({"numel": 2**53}, RejectCode.BAD_SHAPE),
                          ({"codec": "x" * 256}, RejectCode.BAD_CODEC),
                          ({"loss": 1e30, "compute_ms": -1e308}, None),
                          ({"loss": 1.0}, RejectCode.DUPLICATE)):
        reply = only(send(hub, w1.peer, dataclasses.replace(msg, **changes), T0, [grad]))
        if code is None:
            assert isinstance(reply, Ack)
        else:
            assert reject_code(reply) is code, changes
    w2.push(hub, T0, grads(hub, 1)[0], loss=1.0)
    (event,) = [e for e in hub.drain_events() if e["kind"] == "round"]
    assert event["loss"] == (1e30 * 8 + 1.0 * 8) / 16 and event["compute_s"] >= 0.0
    assert bool(torch.isfinite(hub.server.flat()).all())
