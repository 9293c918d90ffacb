"""The h11 invariant for the hub: whatever a peer sends, both sockets answer with valid frames.

One hub lives through every example (two members training). On the encrypted socket each
example mutates a valid request (a field replaced by any JSON value, lone surrogates
included; header bytes flipped; binary frames replaced) and sends it from a paired key, an
unknown key or no key at all. On the pairing socket it sends arbitrary frames, or a PAIR_START
/ PAIR_FINISH of a real run with one field replaced. Neither entry point may raise; every
reply must decode; only the codes the protocol defines for that socket may come back; the
version only moves forward and the weights stay finite.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import torch
from helpers.hub import (HUB_KEY, PIN, SESSION_ID, T0, TORCH, admit, decode_replies, fake_key,
                         finish_message, grads, make_hub, only, pair_start, reject_code, send,
                         start_training)
from helpers.protocol import HEAD
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from computeshare_desktop.codec import get_codec
from computeshare_desktop.events import RoundClosed
from computeshare_desktop.hub import HubCore
from computeshare_desktop.hub.pairing import PairingDesk
from computeshare_desktop.protocol import RejectCode, encode
from computeshare_desktop.protocol.messages import (Ack, Bye, Join, Paired, PairReply, PairStart,
                                                    Ping, Pull, Push, Reject, Shard)

FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ_PAIRING = settings(FUZZ, max_examples=150)  # each example runs real SPAKE2 arithmetic

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
# what a pairing field looks like, nearly: hex of every length, SPAKE2-sized messages with
# side A's tag (some are valid curve points), Z85-like keys, proof-sized hex
hex_text = st.text("0123456789abcdefABCDEF", max_size=80)
pairing_text = (hex_text
                | st.binary(min_size=32, max_size=32).map(lambda b: "41" + b.hex())
                | st.binary(min_size=33, max_size=33).map(bytes.hex)
                | st.binary(min_size=32, max_size=32).map(bytes.hex)
                | st.builds(fake_key, st.binary(max_size=8))
                | st.text(min_size=40, max_size=41))

TO_HUB_CODES = set(RejectCode) - {RejectCode.BAD_PIN, RejectCode.LOCKED_OUT,
                                  RejectCode.UNKNOWN_CHALLENGE, RejectCode.BUSY}
PAIRING_CODES = {RejectCode.MALFORMED, RejectCode.VERSION_MISMATCH, RejectCode.TOO_LARGE,
                 RejectCode.BAD_PIN, RejectCode.LOCKED_OUT, RejectCode.UNKNOWN_CHALLENGE,
                 RejectCode.BUSY}
STRANGER = fake_key(b"stranger")


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
        # the fuzzer's wrong PINs and floods would lock or throttle pairing, and a locked desk
        # never reads a message: a fresh desk (same allowlist) keeps every path reachable
        hub = self.hub
        hub.pairing = PairingDesk(PIN, SESSION_ID, HUB_KEY, hub.allowlist)
        tokens = {m.token for m in hub.members.members()}
        for i, w in enumerate(self.workers):
            if w.token not in tokens:
                self.workers[i] = admit(hub, w.peer, self.now)  # its key is still allowed
                self.workers[i].pull(hub, self.now)

    def templates(self) -> list[tuple[Any, list[bytes]]]:
        hub, w = self.hub, self.workers[0]
        return [
            (Join("fuzz", "cpu", TORCH), []),
            (Shard(w.token, 0, 10), []),
            (Pull(w.token, hub.server.version - 1, 10, hub.fingerprint), []),
            (Push(w.token, hub.server.version, "raw", hub.server.numel, 1.0, 8, 0, 1.0, 0.0),
             [self.grad, b""]),
            (Ping(w.token), []),
            (Bye(w.token), []),
        ]

    def pairing_templates(self) -> list[Any]:
        """A PAIR_START of a fresh run, and the PAIR_FINISH of another open run."""
        run, reply = pair_start(self.hub, b"pairing", self.now)
        assert isinstance(reply, PairReply), reply
        return [PairStart(run.msg_a, "fuzz"),
                finish_message(run, reply, fake_key(b"fuzz"), "pairing")]


HARNESS: Harness | None = None


def harness() -> Harness:
    global HARNESS
    if HARNESS is None:
        HARNESS = Harness()
    HARNESS.heal()
    return HARNESS


def check(h: Harness, peer: bytes, frames: list[bytes], key: str | None) -> None:
    hub = h.hub
    version, before, members = hub.server.version, hub.server.flat(), len(hub.members)
    allowed = key is not None and key in hub.allowlist
    h.now += 0.01
    replies = decode_replies(hub.handle(peer, frames, h.now, key))  # raises on any bad reply
    mine = [o for o in replies if o.peer == peer]
    if not allowed:  # refused before the frames are even parsed
        assert len(replies) == 1 and reject_code(replies[0].msg) is RejectCode.NOT_PAIRED
        assert len(hub.members) == members
    assert len(mine) <= 1
    for o in mine:
        if isinstance(o.msg, Reject):
            assert RejectCode(o.msg.code) in TO_HUB_CODES
    decode_replies(hub.tick(h.now))
    assert hub.server.version >= version
    after = hub.server.flat()
    assert bool(torch.isfinite(after).all())
    if hub.server.version == version:
        assert torch.equal(after, before)


def check_pairing(h: Harness, peer: bytes, frames: list[bytes]) -> Any:
    """The single reply of the pairing socket; an allowlist that grows only with PAIRED."""
    allowed = len(h.hub.allowlist)
    h.now += 0.01
    reply = only(decode_replies(h.hub.handle_pairing(peer, frames, h.now)), peer)
    assert isinstance(reply, (PairReply, Paired, Reject)), reply
    if isinstance(reply, Reject):
        assert RejectCode(reply.code) in PAIRING_CODES
    assert len(h.hub.allowlist) == allowed + isinstance(reply, Paired)
    return reply


keys = st.sampled_from(["own", "other", "stranger", "none"])


def key_for(h: Harness, which: str) -> str | None:
    return {"own": h.workers[0].key, "other": h.workers[1].key, "stranger": STRANGER,
            "none": None}[which]


# ----------------------------------------------------------------- the encrypted socket
@FUZZ
@given(st.integers(0, 5), keys, st.data())
def test_mutated_fields(which: int, key: str, data: st.DataObject) -> None:
    h = harness()
    msg, body = h.templates()[which]
    obj = {"t": msg.TYPE.value, **msgspec.structs.asdict(msg)}
    name = data.draw(st.sampled_from(sorted(obj)))
    obj[name] = data.draw(any_text | json_values if type(obj[name]) is str else json_values)
    header = HEAD + json.dumps(obj).encode()
    check(h, b"fuzz", [header, *body], key_for(h, key))


@FUZZ
@given(st.integers(0, 5), keys, st.data())
def test_flipped_header_bytes_and_replaced_bodies(which: int, key: str,
                                                  data: st.DataObject) -> None:
    h = harness()
    msg, body = h.templates()[which]
    head = bytearray(encode(msg, body)[0])
    for _ in range(data.draw(st.integers(0, 3))):
        # positions drawn independently of the header's length, which depends on hub state
        head[data.draw(st.integers(0, 4095)) % len(head)] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        body = data.draw(st.lists(st.binary(max_size=300), max_size=3))
    check(h, data.draw(st.sampled_from([b"fuzz", b"w1", b""])), [bytes(head), *body],
          key_for(h, key))


@FUZZ
@given(st.lists(st.binary(max_size=200), max_size=4), keys)
def test_arbitrary_frames(frames: list[bytes], key: str) -> None:
    h = harness()
    check(h, b"fuzz", frames, key_for(h, key))


# ----------------------------------------------------------------- the pairing socket
@FUZZ_PAIRING
@given(st.lists(st.binary(max_size=200), max_size=4) | st.lists(
    st.binary(max_size=200).map(lambda b: HEAD + b), min_size=1, max_size=3))
def test_pairing_arbitrary_frames(frames: list[bytes]) -> None:
    h = harness()
    failures = h.hub.pairing.lockout.failures
    reply = check_pairing(h, b"fuzz", frames)
    assert RejectCode(reply.code) in {RejectCode.MALFORMED, RejectCode.VERSION_MISMATCH,
                                      RejectCode.TOO_LARGE}
    assert h.hub.pairing.lockout.failures == failures


@FUZZ_PAIRING
@given(st.integers(0, 1), st.data())
def test_pairing_mutated_fields(which: int, data: st.DataObject) -> None:
    h = harness()
    msg = h.pairing_templates()[which]
    obj = {"t": msg.TYPE.value, **msgspec.structs.asdict(msg)}
    name = data.draw(st.sampled_from(sorted(obj)))
    original = obj[name]
    obj[name] = data.draw(pairing_text | any_text | json_values)
    reply = check_pairing(h, b"fuzz", [HEAD + json.dumps(obj).encode()])
    if obj[name] == original:
        return
    if which == 0:  # a new run: a valid-looking msg_a (or any name) opens one; else MALFORMED
        assert isinstance(reply, PairReply) or reject_code(reply) is RejectCode.MALFORMED
    else:  # a finished run whose message was changed in flight never pairs
        assert not isinstance(reply, Paired)
        assert reject_code(reply) in {RejectCode.MALFORMED, RejectCode.BAD_PIN,
                                      RejectCode.UNKNOWN_CHALLENGE}


@FUZZ_PAIRING
@given(st.integers(0, 1), st.data())
def test_pairing_flipped_header_bytes(which: int, data: st.DataObject) -> None:
    h = harness()
    head = bytearray(encode(h.pairing_templates()[which])[0])
    for _ in range(data.draw(st.integers(1, 3))):
        head[data.draw(st.integers(0, 4095)) % len(head)] = data.draw(st.integers(0, 255))
    check_pairing(h, b"fuzz", [bytes(head)])


def test_a_push_with_fields_at_their_extremes() -> None:
    hub = make_hub()
    w1, w2 = start_training(hub)
    grad = get_codec("raw").encode(grads(hub, 1)[0])
    msg = Push(w1.token, 0, "raw", hub.server.numel, 1.0, 8, 0, 1.0, 0.0)
    for changes, code in (({"samples": 2**53}, RejectCode.MALFORMED),
                          ({"samples": -(2**53)}, RejectCode.MALFORMED),
                          ({"version": -(2**53)}, RejectCode.STALE),
                          ({"version": 2**53}, RejectCode.BAD_VERSION),
                          ({"numel": 2**53}, RejectCode.BAD_SHAPE),
                          ({"codec": "x" * 256}, RejectCode.BAD_CODEC),
                          ({"loss": 1e30, "compute_ms": -1e308}, None),
                          ({"loss": 1.0}, RejectCode.DUPLICATE)):
        reply = only(send(hub, w1.peer, msgspec.structs.replace(msg, **changes), T0, [grad, b""]))
        if code is None:
            assert isinstance(reply, Ack)
        else:
            assert reject_code(reply) is code, changes
    w2.push(hub, T0, grads(hub, 1)[0], loss=1.0)
    (event,) = [e for e in hub.drain_events() if isinstance(e, RoundClosed)]
    assert event.loss == (1e30 * 8 + 1.0 * 8) / 16 and event.compute_s >= 0.0
    assert bool(torch.isfinite(hub.server.flat()).all())
