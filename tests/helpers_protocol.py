"""Shared protocol examples: one valid instance of every message type, and its frames.

Not a test module: tests import it by name (pyproject puts tests/ on pythonpath).
"""

from __future__ import annotations

from typing import Any

from computeshare_desktop.protocol import MESSAGE_CLASSES, MsgType, encode
from computeshare_desktop.protocol.messages import (Ack, Auth, Bye, Challenge, Done, Hello,
                                                    Model, Ping, Pong, Pull, Push, Reject, Shard,
                                                    ShardData, Waiting, Welcome)

HEX32 = "0123456789abcdef" * 2

EXAMPLES: dict[MsgType, Any] = {
    MsgType.HELLO: Hello(client_nonce=HEX32),
    MsgType.CHALLENGE: Challenge(session_id="s1", hub_nonce=HEX32, salt=HEX32),
    MsgType.AUTH: Auth(hub_nonce=HEX32, client_nonce=HEX32, proof=HEX32 * 2, name="laptop",
                       device="cpu"),
    MsgType.WELCOME: Welcome(proof=HEX32 * 2, session_id="s1", worker_id=3, token=HEX32,
                             shard=1, num_shards=2, shard_size=2000, dataset="mnist-sample",
                             model="simplenet", fingerprint="f" * 16, batch_size=32, seed=0,
                             rounds=600, codec="zstd", state="waiting", version=0),
    MsgType.SHARD: Shard(token=HEX32, offset=1024, count=512),
    MsgType.SHARD_DATA: ShardData(offset=0, total=2000, image_shape=[512, 1, 28, 28]),
    MsgType.PULL: Pull(token=HEX32, after=-1, wait_ms=2000, fingerprint="f" * 16),
    MsgType.MODEL: Model(version=41, codec="raw", numel=21840),
    MsgType.WAITING: Waiting(version=41, state="training"),
    MsgType.PUSH: Push(token=HEX32, version=41, codec="zstd", numel=21840, loss=2.302585,
                       samples=32, compute_ms=12.5),
    MsgType.ACK: Ack(version=42),
    MsgType.PING: Ping(token=HEX32),
    MsgType.PONG: Pong(version=42, state="training"),
    MsgType.BYE: Bye(token=HEX32),
    MsgType.DONE: Done(version=600),
    MsgType.REJECT: Reject(code="STALE", detail="current version is 42", version=42,
                           retry_after=0.0),
}


def example_frames(mtype: MsgType) -> list[bytes]:
    """Valid encoded frames of the example message of ``mtype``."""
    cls = MESSAGE_CLASSES[mtype]
    body = [bytes([i]) * (10 + i) for i in range(cls.FRAMES)]
    return encode(EXAMPLES[mtype], body)
