"""The h11 invariant: garbage from a peer either decodes or raises RemoteProtocolError.

Anything else escaping ``decode`` or ``frame_to_tensor`` (ValueError, RecursionError,
OverflowError, ...) would crash the hub's receive loop, so these tests catch nothing else.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from helpers.protocol import EXAMPLES, HEAD, example_frames

from computeshare_desktop.errors import RemoteProtocolError
from computeshare_desktop.protocol import MESSAGE_CLASSES, MsgType, RejectCode, decode, wire
from computeshare_desktop.protocol.tensors import DTYPES, frame_to_tensor

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    | st.sampled_from(["x" * 256, "x" * 257, 2**53, 2**53 + 1, -(2**53) - 1, 2**31 + 1]),
    lambda inner: st.lists(inner, max_size=9) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=4),
    max_leaves=12,
)
msg_types = st.sampled_from(list(MsgType))


def decodes_or_rejects(frames: list[Any], **kwargs: Any) -> Any:
    """Run decode under the invariant; return the message, or None when it was refused."""
    try:
        msg, body = decode(frames, **kwargs)
    except RemoteProtocolError as exc:
        assert isinstance(exc.code, RejectCode)
        return None
    assert type(msg) is MESSAGE_CLASSES[msg.TYPE]
    assert len(body) == msg.FRAMES
    return msg


@FUZZ
@given(st.lists(st.binary(max_size=200), max_size=4))
def test_arbitrary_frames(frames: list[bytes]) -> None:
    decodes_or_rejects(frames)


@FUZZ
@given(st.lists(st.binary(max_size=200), min_size=1, max_size=3), st.binary(max_size=300))
def test_arbitrary_bytes_after_a_valid_prefix(frames: list[bytes], tail: bytes) -> None:
    decodes_or_rejects([HEAD + tail, *frames])


@FUZZ
@given(msg_types, st.data())
def test_truncated_encodings(mtype: MsgType, data: st.DataObject) -> None:
    frames = example_frames(mtype)
    head = frames[0]
    cut = data.draw(st.integers(0, len(head) - 1))
    assert decodes_or_rejects([head[:cut], *frames[1:]]) is None  # a cut header never parses


@FUZZ
@given(msg_types, st.data())
def test_byte_flips(mtype: MsgType, data: st.DataObject) -> None:
    frames = example_frames(mtype)
    head = bytearray(frames[0])
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(head) - 1))
        head[pos] = data.draw(st.integers(0, 255))
    decodes_or_rejects([bytes(head), *frames[1:]])


@FUZZ
@given(msg_types, st.data())
def test_random_json_field_values(mtype: MsgType, data: st.DataObject) -> None:
    msg = EXAMPLES[mtype]
    obj: dict[str, Any] = {"t": mtype.value}
    obj.update({name: getattr(msg, name) for name in msg.__struct_fields__})
    name = data.draw(st.sampled_from(sorted(obj)))
    obj[name] = data.draw(json_values)
    if data.draw(st.booleans()):
        obj[data.draw(st.text(max_size=5))] = data.draw(json_values)
    head = HEAD + json.dumps(obj).encode()
    decoded = decodes_or_rejects([head, *example_frames(mtype)[1:]])
    if decoded is not None:  # whatever got through satisfies the schema
        assert wire.encode(decoded, example_frames(mtype)[1:])[0] is not None


@FUZZ
@given(json_values)
def test_random_json_documents(value: Any) -> None:
    decodes_or_rejects([HEAD + json.dumps(value).encode()])


@FUZZ
@given(msg_types, st.lists(st.binary(max_size=64), max_size=4), st.integers(0, 100))
def test_random_binary_frames_and_caps(mtype: MsgType, body: list[bytes], cap: int) -> None:
    msg = decodes_or_rejects([example_frames(mtype)[0], *body], max_frame_bytes=cap)
    expected_ok = len(body) == MESSAGE_CLASSES[mtype].FRAMES and all(len(b) <= cap for b in body)
    assert (msg == EXAMPLES[mtype]) if expected_ok else msg is None


shapes = st.lists(st.integers(-3, 2**64) | st.sampled_from([0, 1, 2, 4, 2**31, 2**62]),
                  max_size=12)


@FUZZ
@given(st.binary(max_size=256), st.sampled_from([*DTYPES, "float64", "", "object"]), shapes,
       st.integers(0, 2**40))
def test_frame_to_tensor_decodes_or_rejects(frame: bytes, dtype: str, shape: list[int],
                                            cap: int) -> None:
    try:
        tensor = frame_to_tensor(frame, dtype, shape, cap)
    except RemoteProtocolError as exc:
        assert exc.code in (RejectCode.BAD_SHAPE, RejectCode.TOO_LARGE)
        return
    assert tensor.dtype == DTYPES[dtype]
    assert list(tensor.shape) == shape
    assert tensor.numel() * tensor.element_size() == len(frame) <= cap
