"""Shared protocol examples: one valid instance of every message type, and its frames.

Not a test module: tests import it from the helpers package (pyproject puts tests/ on pythonpath).
"""

from __future__ import annotations

from typing import Any

from computeshare_desktop.protocol import MESSAGE_CLASSES, PROTOCOL_VERSION, MsgType, encode
from computeshare_desktop.protocol.messages import (Ack, Bye, Done, GraphData, GraphGet,
                                                    GraphRefusal, Join, Model, Paired,
                                                    PairFinish, PairReply, PairStart, Ping, Pong,
                                                    Probe, ProbeReply,
                                                    Pull, Push, Reject, Shard, ShardData,
                                                    Waiting, Welcome)
from computeshare_desktop.protocol.wire import MAGIC

HEAD = MAGIC + bytes([PROTOCOL_VERSION])  # what every header frame of ours starts with
HEX32 = "0123456789abcdef" * 2
SPAKE_MSG = "41" + HEX32 * 2  # the size of a SPAKE2 message (33 bytes); not a valid point
CURVE_KEY = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"  # 40 Z85 characters (the zmq docs' key)

EXAMPLES: dict[MsgType, Any] = {
    MsgType.PAIR_START: PairStart(msg_a=SPAKE_MSG, name="laptop"),
    MsgType.PAIR_REPLY: PairReply(pair_id=HEX32, msg_b=SPAKE_MSG),
    MsgType.PAIR_FINISH: PairFinish(pair_id=HEX32, worker_key=CURVE_KEY, proof=HEX32 * 2),
    MsgType.PAIRED: Paired(hub_key=CURVE_KEY, session_id="s1", proof=HEX32 * 2),
    MsgType.JOIN: Join(name="laptop", device="cuda:0 (NVIDIA H200)", torch="2.14.1"),
    MsgType.WELCOME: Welcome(session_id="s1", worker_id=3, token=HEX32, shard=1, num_shards=2,
                             shard_size=2000, dataset="mnist-sample", model="simplenet",
                             fingerprint="f" * 16, batch_size=32, seed=0, rounds=600,
                             codec="zstd", state="waiting", version=0, optimizer="adamw",
                             weight_decay=0.05, label_smoothing=0.1, clip_grad=1.0,
                             precision="auto", compute="graph", torch="2.14.1", channels=1,
                             height=28, width=28, num_classes=10, mean=[0.1315],
                             std=[0.3088]),
    MsgType.GRAPH_GET: GraphGet(token=HEX32, part="program", offset=4194304),
    MsgType.GRAPH_DATA: GraphData(part="state", offset=0, total=46_000_000),
    MsgType.GRAPH_REFUSED: GraphRefusal(token=HEX32, reason="op aten.foo is not allowed"),
    MsgType.SHARD: Shard(token=HEX32, offset=1024, count=512),
    MsgType.SHARD_DATA: ShardData(offset=0, total=2000, image_shape=[512, 1, 28, 28]),
    MsgType.PULL: Pull(token=HEX32, after=-1, wait_ms=2000, fingerprint="f" * 16),
    MsgType.MODEL: Model(version=41, codec="zstd", numel=21840, base=40, check="1f2e3d4c",
                         start=1312, batch=32, steps=0, lr=0.02, momentum=0.0, push_codec="int8",
                         topk=0.01),
    MsgType.WAITING: Waiting(version=41, state="training"),
    MsgType.PUSH: Push(token=HEX32, version=41, codec="zstd", numel=21840, loss=2.302585,
                       samples=32, steps=0, compute_ms=12.5, bandwidth=1.25e7),
    MsgType.ACK: Ack(version=42),
    MsgType.PING: Ping(token=HEX32),
    MsgType.PONG: Pong(version=42, state="training"),
    MsgType.BYE: Bye(token=HEX32, paused=True),
    MsgType.DONE: Done(version=600),
    MsgType.REJECT: Reject(code="STALE", detail="current version is 42", version=42,
                           retry_after=0.0),
    MsgType.PROBE: Probe(key=CURVE_KEY, size=1048576),
    MsgType.PROBE_REPLY: ProbeReply(hub_key=CURVE_KEY, session_id="s1", size=1048576,
                                    numel=21840, ttl=19.5),
}


def example_frames(mtype: MsgType) -> list[bytes]:
    """Valid encoded frames of the example message of ``mtype``."""
    cls = MESSAGE_CLASSES[mtype]
    body = [bytes([i]) * (10 + i) for i in range(cls.FRAMES)]
    return encode(EXAMPLES[mtype], body)
