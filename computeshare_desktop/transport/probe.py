"""Measure the link to a hub over its real, encrypted port, without pairing (the doctor).

The hub's pairing port lets a throwaway key probe the encrypted port briefly (hub/probe.py);
this side makes that key, asks, and then times small PROBEs (the round trip) and large ones
(the bandwidth each way) through the same CURVE socket a worker trains over.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from ..errors import RemoteProtocolError
from ..protocol import MsgType, RejectCode, decode, encode
from ..protocol.messages import PROBE_MAX_BYTES, Probe, ProbeReply, Reject
from ..protocol.ports import HubPorts
from .keys import Identity
from .zmq_client import ChannelTimeout, ReqChannel

REPLIES = frozenset({MsgType.PROBE_REPLY, MsgType.REJECT})
FIRST_BYTES = 256 * 1024  # the first bulk transfer, which sizes the next ones
TARGET_S = 0.25  # how long each measured transfer should take
MIN_BYTES = 64 * 1024
BUSY_RETRY_S = 1.1  # the hub grants one check per source address a second


class ProbeFailed(Exception):
    """The link could not be measured; ``stage`` says where (pairing port, encrypted port,
    refused) and the message says why."""

    def __init__(self, stage: str, message: str, code: str = "") -> None:
        super().__init__(message)
        self.stage, self.code = stage, code


@dataclass(frozen=True, slots=True)
class LinkMeasure:
    """What the probe saw: the hub's session and model size, and the link."""

    session_id: str
    numel: int  # the session's model parameters
    rtt_s: float  # median round trip of an empty PROBE
    down_bps: float  # bytes/s from the hub
    up_bps: float  # bytes/s to the hub


def measure_link(host: str, port: int, *, pair_port: int | None = None, pings: int = 8,
                 repeats: int = 3, timeout_s: float = 3.0) -> LinkMeasure:
    """Measure the round trip and the bandwidth both ways to the hub at ``host:port``.

    Blocks for about a second on a LAN (``pings`` round trips, then ``repeats`` transfers
    of about TARGET_S each way).

    Raises:
        ProbeFailed: with ``stage`` "pairing" (the pairing port P+2 gave no answer),
            "encrypted" (port P gave none), or "refused" (the hub said no; ``code``).
    """
    identity = Identity.generate()
    pairing = pair_port or HubPorts.at(port).pairing
    try:
        grant = _ask_grant(host, pairing, identity, timeout_s)
    except ProbeFailed as exc:  # a check ran from here just now: the hub allows one a second
        if exc.code != RejectCode.BUSY.value:
            raise
        time.sleep(BUSY_RETRY_S)
        grant = _ask_grant(host, pairing, identity, timeout_s)
    channel = ReqChannel(f"tcp://{host}:{port}", server_key=grant.hub_key, identity=identity,
                         max_message_bytes=PROBE_MAX_BYTES + 4096)
    try:
        _probe(channel, 0, b"", timeout_s)  # the CURVE handshake, not timed
        rtt = statistics.median(_timed(channel, 0, b"", timeout_s) for _ in range(pings))
        down = _rate(lambda n: _timed(channel, n, b"", timeout_s), rtt, repeats)
        up = _rate(lambda n: _timed(channel, 0, bytes(n), timeout_s), rtt, repeats)
    finally:
        channel.close()
    return LinkMeasure(grant.session_id, grant.numel, rtt, down, up)


def _ask_grant(host: str, pair_port: int, identity: Identity, timeout_s: float) -> ProbeReply:
    channel = ReqChannel(f"tcp://{host}:{pair_port}", max_message_bytes=4096)
    try:
        reply = channel.request(encode(Probe(key=identity.public, size=0), [b""]), timeout_s)
    except ChannelTimeout:
        raise ProbeFailed("pairing", f"the hub's pairing port {host}:{pair_port} did not "
                          f"answer in {timeout_s:.0f} s") from None
    finally:
        channel.close()
    return _parse(reply)


def _parse(frames: list[bytes]) -> ProbeReply:
    try:
        msg, _ = decode(frames, max_frame_bytes=PROBE_MAX_BYTES, expect=REPLIES)
    except RemoteProtocolError as exc:
        raise ProbeFailed("refused", f"the hub's answer did not parse: {exc}") from None
    if isinstance(msg, Reject):
        raise ProbeFailed("refused", f"the hub refused the check: {msg.code} ({msg.detail})",
                          msg.code)
    assert isinstance(msg, ProbeReply)
    return msg


def _probe(channel: ReqChannel, size: int, upload: bytes, timeout_s: float) -> ProbeReply:
    try:
        reply = channel.request(encode(Probe(key="", size=size), [upload]),
                                timeout_s + 8 * (size + len(upload)) / 1e6)  # >= 1 Mbit/s
    except ChannelTimeout:
        raise ProbeFailed("encrypted", f"the hub's port {channel.address} did not answer "
                          f"over the encrypted channel in {timeout_s:.0f} s") from None
    except PermissionError:
        raise ProbeFailed("refused", "the hub refused this check's key on its encrypted "
                          "port", RejectCode.NOT_PAIRED.value) from None
    return _parse(reply)


def _timed(channel: ReqChannel, size: int, upload: bytes, timeout_s: float) -> float:
    start = time.perf_counter()
    _probe(channel, size, upload, timeout_s)
    return time.perf_counter() - start


def _rate(transfer: Any, rtt: float, repeats: int) -> float:
    """Bytes/s of the median of ``repeats`` transfers, sized to take about TARGET_S."""
    first = max(transfer(FIRST_BYTES) - rtt, 1e-6)
    size = int(min(PROBE_MAX_BYTES, max(MIN_BYTES, FIRST_BYTES / first * TARGET_S)))
    seconds = statistics.median(max(transfer(size) - rtt, 1e-6) for _ in range(repeats))
    return size / seconds
