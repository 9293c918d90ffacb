"""Messages <-> ZeroMQ frames. Pure: bytes in, messages out, or RemoteProtocolError.

A message is one header frame followed by ``FRAMES`` raw binary frames::

    b"CS" + bytes([PROTOCOL_VERSION]) + JSON object {"t": type, field: value, ...}

Decoding never runs code from the peer (JSON only, no pickle) and checks every size before
it is trusted: the header length, the number of frames, each field's type and length, and
each binary frame against the caller's cap. Garbage either decodes or raises
``RemoteProtocolError`` with a reject code, nothing else (the h11 invariant).
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from typing import Any, Sequence

from ..errors import LocalProtocolError, RemoteProtocolError
from .codes import RejectCode
from .messages import MESSAGE_CLASSES, MsgType

MAGIC = b"CS"
PROTOCOL_VERSION = 3
MAX_HEADER_BYTES = 4096
MAX_STR_CHARS = 256
MAX_LIST_ITEMS = 8
MAX_INT = 2**53
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024

Frame = bytes | memoryview


def _check_int(value: Any) -> bool:
    return type(value) is int and -MAX_INT <= value <= MAX_INT


def _check_float(value: Any) -> bool:
    # NaN and infinity parse; whether they are acceptable is the receiver's decision.
    return (type(value) is float) or _check_int(value)


def _check_str(value: Any) -> bool:
    if type(value) is not str or len(value) > MAX_STR_CHARS:
        return False
    try:
        # JSON can spell lone surrogates (\ud800), which no later .encode() accepts.
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_bool(value: Any) -> bool:
    return type(value) is bool


def _check_int_list(value: Any) -> bool:
    return (type(value) is list and len(value) <= MAX_LIST_ITEMS
            and all(type(v) is int and 0 <= v <= 2**31 for v in value))


_CHECKERS = {int: _check_int, float: _check_float, str: _check_str, bool: _check_bool,
             list[int]: _check_int_list}


def _schema(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: _CHECKERS[hints[f.name]] for f in dataclasses.fields(cls)}


_SCHEMAS: dict[MsgType, dict[str, Any]] = {t: _schema(c) for t, c in MESSAGE_CLASSES.items()}


def encode(message: Any, frames: Sequence[Frame] = ()) -> list[Frame]:
    """Return the frames of ``message`` followed by its binary ``frames``."""
    mtype = getattr(type(message), "TYPE", None)
    cls: Any = MESSAGE_CLASSES.get(mtype) if isinstance(mtype, MsgType) else None
    if cls is None or type(message) is not cls:
        raise LocalProtocolError(RejectCode.MALFORMED,
                                 f"not a protocol message: {type(message)!r}")
    if len(frames) != cls.FRAMES:
        raise LocalProtocolError(RejectCode.MALFORMED,
                                 f"{cls.TYPE.value} takes {cls.FRAMES} frames, got {len(frames)}")
    fields = {name: getattr(message, name) for name in _SCHEMAS[cls.TYPE]}
    for name, check in _SCHEMAS[cls.TYPE].items():
        if not check(fields[name]):
            raise LocalProtocolError(RejectCode.MALFORMED, f"bad field {name}={fields[name]!r}")
    body = json.dumps({"t": cls.TYPE.value, **fields}, separators=(",", ":")).encode()
    header = MAGIC + bytes([PROTOCOL_VERSION]) + body
    if len(header) > MAX_HEADER_BYTES:
        raise LocalProtocolError(RejectCode.TOO_LARGE, "header too large")
    return [header, *frames]


def _parse_header(header: Frame) -> dict[str, Any]:
    if len(header) > MAX_HEADER_BYTES:
        raise RemoteProtocolError(RejectCode.TOO_LARGE, f"header of {len(header)} bytes")
    raw = bytes(header)
    if len(raw) < 3 or raw[:2] != MAGIC:
        raise RemoteProtocolError(RejectCode.MALFORMED, "not a ComputeShare frame")
    if raw[2] != PROTOCOL_VERSION:
        raise RemoteProtocolError(RejectCode.VERSION_MISMATCH,
                                  f"peer speaks protocol {raw[2]}, we speak {PROTOCOL_VERSION}")
    try:
        obj = json.loads(raw[3:].decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise RemoteProtocolError(RejectCode.MALFORMED, "header is not JSON") from exc
    if type(obj) is not dict:
        raise RemoteProtocolError(RejectCode.MALFORMED, "header is not a JSON object")
    return obj


def decode(frames: Sequence[Frame], *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
           expect: frozenset[MsgType] | None = None) -> tuple[Any, list[Frame]]:
    """Parse ``frames`` into ``(message, binary_frames)``.

    Raises:
        RemoteProtocolError: with MALFORMED, VERSION_MISMATCH or TOO_LARGE.
    """
    if not frames:
        raise RemoteProtocolError(RejectCode.MALFORMED, "empty message")
    obj = _parse_header(frames[0])
    try:
        mtype = MsgType(obj.pop("t", None))
    except ValueError:
        raise RemoteProtocolError(RejectCode.MALFORMED, "unknown message type") from None
    if expect is not None and mtype not in expect:
        raise RemoteProtocolError(RejectCode.MALFORMED, f"unexpected message {mtype.value}")
    schema = _SCHEMAS[mtype]
    if obj.keys() != schema.keys():
        raise RemoteProtocolError(RejectCode.MALFORMED, f"wrong fields for {mtype.value}")
    for name, check in schema.items():
        if not check(obj[name]):
            raise RemoteProtocolError(RejectCode.MALFORMED, f"bad value for {mtype.value}.{name}")
    cls = MESSAGE_CLASSES[mtype]
    body = list(frames[1:])
    if len(body) != cls.FRAMES:
        raise RemoteProtocolError(RejectCode.MALFORMED,
                                  f"{mtype.value} takes {cls.FRAMES} frames, got {len(body)}")
    for frame in body:
        if len(frame) > max_frame_bytes:
            raise RemoteProtocolError(RejectCode.TOO_LARGE, f"frame of {len(frame)} bytes")
    return cls(**obj), body


def finite(*values: float) -> bool:
    """True when every value is a finite number."""
    return all(math.isfinite(v) for v in values)
