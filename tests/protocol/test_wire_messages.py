"""Wire format: every message round trips; every kind of bad header gets its reject code."""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import pytest
from helpers.protocol import EXAMPLES, HEAD, example_frames

from computeshare_desktop.errors import LocalProtocolError, RemoteProtocolError
from computeshare_desktop.protocol import (MESSAGE_CLASSES, PROTOCOL_VERSION, TO_HUB, TO_PAIRING,
                                           MsgType, RejectCode, decode, encode, wire)
from computeshare_desktop.protocol.messages import (Ack, Join, PairStart, Ping, Push, ShardData,
                                                    Welcome)


def header(obj: Any, *, version: int = PROTOCOL_VERSION) -> bytes:
    """A header frame carrying ``obj`` as its JSON."""
    return wire.MAGIC + bytes([version]) + json.dumps(obj).encode()


def fields_of(mtype: MsgType) -> dict[str, Any]:
    msg = EXAMPLES[mtype]
    return {"t": mtype.value, **msgspec.structs.asdict(msg)}


def rejected(frames: list[bytes], **kwargs: Any) -> RejectCode:
    with pytest.raises(RemoteProtocolError) as info:
        decode(frames, **kwargs)
    return info.value.code


def test_examples_cover_every_message_type() -> None:
    assert set(EXAMPLES) == set(MESSAGE_CLASSES) == set(MsgType)
    assert all(type(EXAMPLES[t]) is MESSAGE_CLASSES[t] for t in MsgType)


@pytest.mark.parametrize("mtype", list(MsgType), ids=lambda t: t.value)
def test_round_trip(mtype: MsgType) -> None:
    frames = example_frames(mtype)
    assert frames[0][:3] == b"CS\x07" == HEAD
    msg, body = decode(frames)
    assert msg == EXAMPLES[mtype]
    assert type(msg) is MESSAGE_CLASSES[mtype]
    assert [bytes(b) for b in body] == frames[1:]
    assert len(body) == MESSAGE_CLASSES[mtype].FRAMES


def test_round_trip_memoryview_frames() -> None:
    frames = [memoryview(f) for f in example_frames(MsgType.PUSH)]
    msg, body = decode(frames)
    assert msg == EXAMPLES[MsgType.PUSH]
    assert bytes(body[0]) == bytes(frames[1])


def test_round_trip_keeps_non_finite_floats_for_the_receiver_to_judge() -> None:
    push = msgspec.structs.replace(EXAMPLES[MsgType.PUSH], loss=float("nan"),
                               compute_ms=float("inf"))
    msg, _ = decode(encode(push, [b"x", b""]))
    assert math.isnan(msg.loss) and msg.compute_ms == math.inf
    assert not wire.finite(msg.loss, msg.compute_ms)
    assert wire.finite(1.0, -2.5, 0.0)


def test_round_trip_limits_exactly() -> None:
    """The largest values the schema allows survive: 2**53 ints, 256-char strings, 8 dims."""
    shard_data = ShardData(offset=2**53, total=-(2**53), image_shape=[2**31] * 8)
    assert decode(encode(shard_data, [b"", b""]))[0] == shard_data
    start = PairStart(msg_a="é" * wire.MAX_STR_CHARS, name="")
    assert decode(encode(start))[0] == start


# ----------------------------------------------------------------- header-level rejections
def test_empty_message_is_malformed() -> None:
    assert rejected([]) is RejectCode.MALFORMED


@pytest.mark.parametrize("head", [b"", b"C", b"CS", b"XX\x01{}", b"cs\x01{}", b"\x00S\x01{}"])
def test_wrong_magic_is_malformed(head: bytes) -> None:
    assert rejected([head]) is RejectCode.MALFORMED


def test_protocol_version_is_seven() -> None:
    # 1 was the HMAC challenge-response pairing, 2 sent whole float32 models every round,
    # 3's Welcome had no training recipe, 4 had no graphs and no statistics frames,
    # 5 had no data kinds, shard cache or augmentation, 6 no removal notice, paired
    # machines or pausing
    assert PROTOCOL_VERSION == 7


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5, 6, 8, 255])
def test_other_protocol_version(version: int) -> None:
    frames = example_frames(MsgType.PAIR_START)
    frames[0] = frames[0][:2] + bytes([version]) + frames[0][3:]
    with pytest.raises(RemoteProtocolError) as info:
        decode(frames)
    assert info.value.code is RejectCode.VERSION_MISMATCH
    assert str(version) in info.value.detail


@pytest.mark.parametrize("body", [b"", b"{", b"{'t': 'ping'}", b"\xff\xfe{}", b"nul",
                                  b'{"t":"ping","token":"a"} trailing', b"\x00"])
def test_non_json_is_malformed(body: bytes) -> None:
    assert rejected([HEAD + body]) is RejectCode.MALFORMED


@pytest.mark.parametrize("value", [[], [1, 2], "ping", 3, 2.5, None, True])
def test_json_that_is_not_an_object_is_malformed(value: Any) -> None:
    assert rejected([header(value)]) is RejectCode.MALFORMED


@pytest.mark.parametrize("opening,closing", [(b"[", b"]"), (b'{"a":', b"}")])
def test_deep_nesting_is_malformed_not_recursion_error(opening: bytes, closing: bytes) -> None:
    depth = (wire.MAX_HEADER_BYTES - 3) // (len(opening) + len(closing))
    frame = HEAD + opening * depth + closing * depth
    assert len(frame) <= wire.MAX_HEADER_BYTES and depth > 500
    assert rejected([frame]) is RejectCode.MALFORMED
    assert rejected([HEAD + opening * depth]) is RejectCode.MALFORMED


def test_5000_levels_are_rejected_too_large_or_malformed(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = HEAD + b"[" * 5000 + b"]" * 5000
    assert rejected([frame]) is RejectCode.TOO_LARGE  # 10 kB: over the header cap first
    monkeypatch.setattr(wire, "MAX_HEADER_BYTES", 1 << 20)
    assert rejected([frame]) is RejectCode.MALFORMED  # with no cap: the parser's own limit
    assert rejected([HEAD + b"[" * 200_000]) is RejectCode.MALFORMED


@pytest.mark.parametrize("t", ["nope", "", None, 5, ["ping"], {"t": "ping"}, "PING"])
def test_unknown_type_is_malformed(t: Any) -> None:
    obj = {"t": t, "token": "a"}
    assert rejected([header(obj)]) is RejectCode.MALFORMED
    assert rejected([header({"token": "a"})]) is RejectCode.MALFORMED  # no "t" at all


@pytest.mark.parametrize("mtype", list(MsgType), ids=lambda t: t.value)
def test_missing_field_is_malformed(mtype: MsgType) -> None:
    """A field without a default is required; one with a default (added in the protocol's
    version 6) may be left out, and reads as its default."""
    obj = fields_of(mtype)
    body = example_frames(mtype)[1:]
    optional = {f.name: f.default_factory() if f.default is msgspec.NODEFAULT else f.default
                for f in msgspec.structs.fields(MESSAGE_CLASSES[mtype]) if not f.required}
    for name in [k for k in obj if k != "t"]:
        partial = {k: v for k, v in obj.items() if k != name}
        if name in optional:
            assert getattr(decode([header(partial), *body])[0], name) == optional[name]
        else:
            assert rejected([header(partial), *body]) is RejectCode.MALFORMED, name


@pytest.mark.parametrize("mtype", list(MsgType), ids=lambda t: t.value)
def test_extra_field_is_malformed(mtype: MsgType) -> None:
    obj = {**fields_of(mtype), "extra": 1}
    assert rejected([header(obj), *example_frames(mtype)[1:]]) is RejectCode.MALFORMED
    # the untouched header decodes, so the extra field alone made the difference
    assert decode([header(fields_of(mtype)), *example_frames(mtype)[1:]])[0] == EXAMPLES[mtype]


@pytest.mark.parametrize("mtype,name,value", [
    (MsgType.ACK, "version", True),  # bool where int
    (MsgType.ACK, "version", 1.0),  # float where int
    (MsgType.ACK, "version", "1"),
    (MsgType.ACK, "version", None),
    (MsgType.ACK, "version", 2**53 + 1),  # outside the exact-double range
    (MsgType.ACK, "version", -(2**53) - 1),
    (MsgType.PUSH, "loss", "1.0"),
    (MsgType.PUSH, "loss", True),  # bool where float
    (MsgType.PUSH, "loss", [1.0]),
    (MsgType.PUSH, "loss", 2**53 + 1),  # an int stands for a float only while it is exact
    (MsgType.PAIR_START, "msg_a", "x" * (wire.MAX_STR_CHARS + 1)),  # str too long
    (MsgType.PAIR_START, "msg_a", 5),
    (MsgType.PAIR_START, "name", "\ud800"),  # lone surrogate: valid JSON, not text
    (MsgType.PAIR_FINISH, "worker_key", None),
    (MsgType.PAIR_FINISH, "proof", ["00" * 32]),
    (MsgType.PAIRED, "hub_key", 1),
    (MsgType.JOIN, "device", "\udfff"),
    (MsgType.SHARD_DATA, "image_shape", [1] * (wire.MAX_LIST_ITEMS + 1)),  # list too long
    (MsgType.SHARD_DATA, "image_shape", [1, -1]),
    (MsgType.SHARD_DATA, "image_shape", [1, True]),
    (MsgType.SHARD_DATA, "image_shape", [1, 2.0]),
    (MsgType.SHARD_DATA, "image_shape", [2**31 + 1]),
    (MsgType.SHARD_DATA, "image_shape", "1,28,28"),
    (MsgType.SHARD_DATA, "image_shape", {"0": 1}),
])
def test_wrong_field_type_is_malformed(mtype: MsgType, name: str, value: Any) -> None:
    obj = {**fields_of(mtype), name: value}
    body = example_frames(mtype)[1:]
    with pytest.raises(RemoteProtocolError) as info:
        decode([header(obj), *body])
    assert info.value.code is RejectCode.MALFORMED
    assert name in info.value.detail


@pytest.mark.parametrize("obj", [
    {"t": "shard", "token": "a", "offset": 0, "count": "\ud800"},  # where an int is due
    {"t": "push", "token": "a", "version": 1, "codec": "raw", "numel": 1, "loss": "\udfff",
     "samples": 1, "steps": 0, "compute_ms": 0.0, "bandwidth": 0.0},  # where a float is due
    {"t": "shard_data", "offset": 0, "total": 1, "image_shape": [1, "\udc80"]},  # in a list
    {"t": "ping", "token": "a", "\ud800": 1},  # as a field's name
    {"t": "ping", "token": "a\ud800b"},  # in a string
    {"t": "\ud800", "token": "a"},  # as the type
])
def test_lone_surrogates_anywhere_are_malformed_and_stay_out_of_the_detail(
        obj: dict[str, Any]) -> None:
    frames = [header(obj), *([b"", b""] if obj["t"] == "shard_data" else [b"g"] * (
        obj["t"] == "push"))]
    assert rejected(frames) is RejectCode.MALFORMED
    with pytest.raises(RemoteProtocolError) as info:
        decode(frames)
    info.value.detail.encode("ascii")  # the detail goes back in a REJECT and into logs


def test_the_header_is_protocol_5_byte_for_byte() -> None:
    """The standard library writes the JSON as before msgspec: fields in order after "t",
    no spaces, non-ASCII escaped, NaN and Infinity spelled out (a peer of the same protocol
    version, old or new, reads them alike)."""
    push = Push(token="\u00e9\n\"", version=-1, codec="raw", numel=2**53, loss=float("nan"),
                samples=0, steps=3, compute_ms=float("-inf"), bandwidth=1.25e7)
    assert encode(push, [b"", b""])[0] == (
        b'CS\x07{"t":"push","token":"\\u00e9\\n\\"","version":-1,"codec":"raw",'
        b'"numel":9007199254740992,"loss":NaN,"samples":0,"steps":3,"compute_ms":-Infinity,'
        b'"bandwidth":12500000.0}')
    join = Join(name="machine-\U0001f642", device="cpu", torch="2.14.1")
    assert encode(join)[0] == (b'CS\x07{"t":"join","name":"machine-\\ud83d\\ude42","device":"cpu",'
                               b'"torch":"2.14.1"}')
    assert decode(encode(join))[0] == join  # a surrogate pair is one character, not a lone one
    shape = ShardData(offset=0, total=5, image_shape=[5, 1, 28, 28])
    assert encode(shape, [b"", b""])[0] == (
        b'CS\x07{"t":"shard_data","offset":0,"total":5,"image_shape":[5,1,28,28],'
        b'"same":false,"dtype":"uint8"}')


def test_int_is_accepted_where_float_is_expected() -> None:
    obj = {**fields_of(MsgType.PUSH), "loss": 2, "compute_ms": 0}
    msg, _ = decode([header(obj), b"g", b""])
    assert msg.loss == 2 and msg.compute_ms == 0


@pytest.mark.parametrize("mtype", list(MsgType), ids=lambda t: t.value)
def test_wrong_number_of_binary_frames_is_malformed(mtype: MsgType) -> None:
    frames = example_frames(mtype)
    need = MESSAGE_CLASSES[mtype].FRAMES
    assert rejected(frames + [b"extra"]) is RejectCode.MALFORMED
    if need:
        assert rejected(frames[:-1]) is RejectCode.MALFORMED


def test_header_over_the_cap_is_too_large() -> None:
    obj = {**fields_of(MsgType.PING), "token": "a"}
    base = header(obj)
    padded = base[:-1] + b" " * (wire.MAX_HEADER_BYTES - len(base)) + b"}"
    assert len(padded) == wire.MAX_HEADER_BYTES
    assert decode([padded])[0] == Ping(token="a")  # exactly at the cap: fine
    over = padded[:-1] + b" }"
    assert rejected([over]) is RejectCode.TOO_LARGE
    assert rejected([b"\x00" * (wire.MAX_HEADER_BYTES + 1)]) is RejectCode.TOO_LARGE


def test_binary_frame_over_the_cap_is_too_large() -> None:
    frames = encode(EXAMPLES[MsgType.PUSH], [b"\x00" * 1000, b""])
    assert decode(frames, max_frame_bytes=1000)[1][0] == b"\x00" * 1000
    with pytest.raises(RemoteProtocolError) as info:
        decode(frames, max_frame_bytes=999)
    assert info.value.code is RejectCode.TOO_LARGE
    assert "1000" in info.value.detail
    frames = encode(EXAMPLES[MsgType.SHARD_DATA], [b"", b"\x01" * 11])
    assert rejected(frames, max_frame_bytes=10) is RejectCode.TOO_LARGE


@pytest.mark.parametrize("expect", [TO_HUB, TO_PAIRING], ids=["to_hub", "to_pairing"])
def test_expect_filters_message_types(expect: frozenset[MsgType]) -> None:
    for mtype in MsgType:
        frames = example_frames(mtype)
        if mtype in expect:
            assert decode(frames, expect=expect)[0] == EXAMPLES[mtype]
        else:
            assert rejected(frames, expect=expect) is RejectCode.MALFORMED
    assert rejected(example_frames(MsgType.PING), expect=frozenset()) is RejectCode.MALFORMED


def test_to_hub_and_to_pairing_are_exactly_the_worker_requests() -> None:
    assert TO_HUB == {MsgType.JOIN, MsgType.GRAPH_GET, MsgType.GRAPH_REFUSED, MsgType.SHARD,
                      MsgType.PULL, MsgType.PUSH, MsgType.PING, MsgType.BYE}
    assert TO_PAIRING == {MsgType.PAIR_START, MsgType.PAIR_FINISH}
    # pairing messages are never accepted on the encrypted socket, nor the reverse
    assert not TO_HUB & TO_PAIRING


def test_welcome_carries_no_proof_any_more() -> None:
    # the hub proves the PIN once, in PAIRED; after that CURVE authenticates every frame
    assert "proof" not in {f.name for f in msgspec.structs.fields(Welcome)}
    assert {f.name for f in msgspec.structs.fields(Join)} == {"name", "device", "torch"}


# ----------------------------------------------------------------- encoding our own messages
@pytest.mark.parametrize("message,frames,code", [
    (Ack(version=True), (), RejectCode.MALFORMED),  # type: ignore[arg-type]
    (Ack(version=1.5), (), RejectCode.MALFORMED),  # type: ignore[arg-type]
    (Ack(version=2**60), (), RejectCode.MALFORMED),
    (PairStart(msg_a="x" * 257, name="w"), (), RejectCode.MALFORMED),
    (Join(name="\udc80", device="cpu", torch="2.14.1"), (), RejectCode.MALFORMED),
    (ShardData(0, 0, [1] * 9), (b"", b""), RejectCode.MALFORMED),
    (Ack(version=1), (b"unexpected",), RejectCode.MALFORMED),
    (Push("t", 0, "raw", 1, 0.0, 1, 0, 0.0, 0.0), (), RejectCode.MALFORMED),
    ({"t": "ack", "version": 1}, (), RejectCode.MALFORMED),
    (object(), (), RejectCode.MALFORMED),
])
def test_encoding_an_invalid_message_raises_local_error(message: Any, frames: tuple[bytes, ...],
                                                        code: RejectCode) -> None:
    with pytest.raises(LocalProtocolError) as info:
        encode(message, frames)
    assert info.value.code is code


def test_encoding_a_header_over_the_cap_raises_too_large() -> None:
    # 7 strings of 256 characters: every field is valid, the header as a whole is not
    s = "é" * 256
    big = Welcome(session_id=s, worker_id=1, token=s, shard=0, num_shards=1, shard_size=1,
                  dataset=s, model=s, fingerprint=s, batch_size=1, seed=1, rounds=1, codec=s,
                  state=s, version=0, optimizer="sgd", weight_decay=0.0, label_smoothing=0.0,
                  clip_grad=0.0, precision="fp32", compute="builtin", torch=s, channels=1,
                  height=1, width=1, num_classes=1, mean=[0.0], std=[1.0])
    with pytest.raises(LocalProtocolError) as info:
        encode(big)
    assert info.value.code is RejectCode.TOO_LARGE
