"""Messages <-> ZeroMQ frames. Pure: bytes in, messages out, or RemoteProtocolError.

A message is one header frame followed by ``FRAMES`` raw binary frames::

    b"CS" + bytes([PROTOCOL_VERSION]) + JSON object {"t": type, field: value, ...}

Decoding never runs code from the peer (JSON only, no pickle) and checks every size before
it is trusted: the header length, the number of frames, each field against its declared
type and bounds (msgspec, strict: no coercion, no unknown fields), and each binary frame
against the caller's cap. Garbage either decodes or raises ``RemoteProtocolError`` with a
reject code, nothing else (the h11 invariant).
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

import msgspec

from ..errors import LocalProtocolError, RemoteProtocolError
from .codes import RejectCode
from .messages import MAX_LIST_ITEMS as MAX_LIST_ITEMS  # the bounds live on the types
from .messages import MAX_STR_CHARS as MAX_STR_CHARS
from .messages import MESSAGE_CLASSES, MsgType

MAGIC = b"CS"
PROTOCOL_VERSION = 7  # 4: the Welcome carries the training recipe; 5: graphs (GRAPH_GET,
# GRAPH_DATA, GRAPH_REFUSED), the torch release in Join and Welcome, statistics frames;
# 6: your own data (tables, the worker's shard cache, augmentation); 7: the app's third pass
# (the host removing a machine, paired machines across sessions, pausing workers)
MAX_HEADER_BYTES = 4096
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024

Frame = bytes | memoryview


def _why(exc: Exception) -> str:
    """msgspec's reason, short and ASCII: it may quote the peer's own text (a field name)."""
    return str(exc)[:160].encode("ascii", "backslashreplace").decode("ascii")


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
    try:  # the receiver's checks, run on our side first: sending garbage is our bug
        fields = msgspec.to_builtins(message)
        msgspec.convert(fields, cls, strict=True)
    except (ValueError, TypeError) as exc:  # TypeError: not JSON at all
        raise LocalProtocolError(RejectCode.MALFORMED,
                                 f"bad {cls.TYPE.value}: {_why(exc)}") from None
    # The standard library writes the text: NaN and Infinity travel (msgspec would send null).
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
                                  f"peer speaks protocol {raw[2]}, we speak {PROTOCOL_VERSION}: "
                                  f"run the same ComputeShare release on both machines")
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
    cls = MESSAGE_CLASSES[mtype]
    try:
        message = msgspec.convert(obj, cls, strict=True)
    except ValueError as exc:  # ValidationError, or a lone surrogate where no Str is due
        raise RemoteProtocolError(RejectCode.MALFORMED,
                                  f"bad {mtype.value}: {_why(exc)}") from None
    body = list(frames[1:])
    if len(body) != cls.FRAMES:
        raise RemoteProtocolError(RejectCode.MALFORMED,
                                  f"{mtype.value} takes {cls.FRAMES} frames, got {len(body)}")
    for frame in body:
        if len(frame) > max_frame_bytes:
            raise RemoteProtocolError(RejectCode.TOO_LARGE, f"frame of {len(frame)} bytes")
    return message, body


def finite(*values: float) -> bool:
    """True when every value is a finite number."""
    return all(math.isfinite(v) for v in values)
