"""The messages of the hub/worker protocol, as frozen dataclasses.

Each message class names its wire type (``TYPE``) and how many binary frames follow its
header (``FRAMES``). Field types are deliberately few (int, float, str, bool, list[int]) so
that ``wire.py`` can validate every header strictly from the annotations alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar


class MsgType(str, Enum):
    """Message types; the value travels as the header's ``t`` field."""

    PAIR_START = "pair_start"  # worker -> hub (pairing socket): SPAKE2 message A
    PAIR_REPLY = "pair_reply"  # hub -> worker: SPAKE2 message B
    PAIR_FINISH = "pair_finish"  # worker -> hub: worker key + key confirmation
    PAIRED = "paired"  # hub -> worker: hub key + key confirmation
    JOIN = "join"  # worker -> hub (encrypted socket): take a shard
    WELCOME = "welcome"  # hub -> worker: membership, shard and session configuration
    SHARD = "shard"  # worker -> hub: ask for a chunk of the data shard
    SHARD_DATA = "shard_data"  # hub -> worker: images and labels of that chunk
    PULL = "pull"  # worker -> hub: long-poll for a model newer than `after`
    MODEL = "model"  # hub -> worker: one version's weights (whole or a delta) + this round's work
    WAITING = "waiting"  # hub -> worker: nothing newer yet (long-poll ran out)
    PUSH = "push"  # worker -> hub: encoded gradient computed on `version`
    ACK = "ack"  # hub -> worker: request accepted
    PING = "ping"  # worker -> hub: heartbeat
    PONG = "pong"  # hub -> worker: heartbeat answer
    BYE = "bye"  # worker -> hub: leaving; free my shard
    DONE = "done"  # hub -> worker: the session has finished; stop
    REJECT = "reject"  # hub -> worker: refusal with a code


class SessionState(str, Enum):
    """Where a hub session stands."""

    WAITING = "waiting"  # waiting for the expected workers
    TRAINING = "training"  # rounds are running
    DONE = "done"  # finished; the model is saved
    STOPPED = "stopped"  # stopped before the end (saved; can be resumed): workers must go


@dataclass(frozen=True, slots=True)
class PairStart:
    TYPE: ClassVar[MsgType] = MsgType.PAIR_START
    FRAMES: ClassVar[int] = 0
    msg_a: str  # SPAKE2 message, hex
    name: str


@dataclass(frozen=True, slots=True)
class PairReply:
    TYPE: ClassVar[MsgType] = MsgType.PAIR_REPLY
    FRAMES: ClassVar[int] = 0
    pair_id: str
    msg_b: str  # SPAKE2 message, hex


@dataclass(frozen=True, slots=True)
class PairFinish:
    TYPE: ClassVar[MsgType] = MsgType.PAIR_FINISH
    FRAMES: ClassVar[int] = 0
    pair_id: str
    worker_key: str  # the worker's long-term CURVE public key, Z85
    proof: str  # key confirmation covering worker_key and name


@dataclass(frozen=True, slots=True)
class Paired:
    TYPE: ClassVar[MsgType] = MsgType.PAIRED
    FRAMES: ClassVar[int] = 0
    hub_key: str  # the hub's long-term CURVE public key, Z85
    session_id: str
    proof: str  # key confirmation covering hub_key and session_id


@dataclass(frozen=True, slots=True)
class Join:
    TYPE: ClassVar[MsgType] = MsgType.JOIN
    FRAMES: ClassVar[int] = 0
    name: str
    device: str


@dataclass(frozen=True, slots=True)
class Welcome:
    TYPE: ClassVar[MsgType] = MsgType.WELCOME
    FRAMES: ClassVar[int] = 0
    session_id: str
    worker_id: int
    token: str
    shard: int
    num_shards: int
    shard_size: int
    dataset: str
    model: str
    fingerprint: str
    batch_size: int
    seed: int
    rounds: int
    codec: str
    state: str
    version: int


@dataclass(frozen=True, slots=True)
class Shard:
    TYPE: ClassVar[MsgType] = MsgType.SHARD
    FRAMES: ClassVar[int] = 0
    token: str
    offset: int
    count: int


@dataclass(frozen=True, slots=True)
class ShardData:
    TYPE: ClassVar[MsgType] = MsgType.SHARD_DATA
    FRAMES: ClassVar[int] = 2  # uint8 images (N, C, H, W), int64 labels (N,)
    offset: int
    total: int
    image_shape: list[int]


@dataclass(frozen=True, slots=True)
class Pull:
    TYPE: ClassVar[MsgType] = MsgType.PULL
    FRAMES: ClassVar[int] = 0
    token: str
    after: int  # the newest version the worker has; -1 for none
    wait_ms: int  # how long the hub may hold the request
    fingerprint: str


@dataclass(frozen=True, slots=True)
class Model:
    TYPE: ClassVar[MsgType] = MsgType.MODEL
    FRAMES: ClassVar[int] = 1  # the weights, encoded with `codec`
    version: int
    codec: str
    numel: int
    base: int  # -1: the frame is the whole model; else a delta from version `base`
    check: str  # fingerprint of the weights of `version` (codec.delta.weights_check)
    start: int  # this round's work: samples [start, start + steps*batch) of the shard's stream
    batch: int  # samples per step
    steps: int  # 0: push the gradient of one batch; H >= 1: take H local steps, push the change
    lr: float  # learning rate of the local steps
    momentum: float  # momentum kept on the worker (sparse pushes); 0: the hub keeps it
    push_codec: str  # how to encode the push
    topk: float  # the top-k fraction, when push_codec is topk


@dataclass(frozen=True, slots=True)
class Waiting:
    TYPE: ClassVar[MsgType] = MsgType.WAITING
    FRAMES: ClassVar[int] = 0
    version: int
    state: str


@dataclass(frozen=True, slots=True)
class Push:
    TYPE: ClassVar[MsgType] = MsgType.PUSH
    FRAMES: ClassVar[int] = 1  # the gradient (steps 0) or the weight change, encoded
    token: str
    version: int
    codec: str
    numel: int
    loss: float
    samples: int  # samples processed, all steps together
    steps: int  # as in the MODEL this answers
    compute_ms: float
    bandwidth: float  # the worker's measured download rate in bytes/s; 0 when unknown


@dataclass(frozen=True, slots=True)
class Ack:
    TYPE: ClassVar[MsgType] = MsgType.ACK
    FRAMES: ClassVar[int] = 0
    version: int


@dataclass(frozen=True, slots=True)
class Ping:
    TYPE: ClassVar[MsgType] = MsgType.PING
    FRAMES: ClassVar[int] = 0
    token: str


@dataclass(frozen=True, slots=True)
class Pong:
    TYPE: ClassVar[MsgType] = MsgType.PONG
    FRAMES: ClassVar[int] = 0
    version: int
    state: str


@dataclass(frozen=True, slots=True)
class Bye:
    TYPE: ClassVar[MsgType] = MsgType.BYE
    FRAMES: ClassVar[int] = 0
    token: str


@dataclass(frozen=True, slots=True)
class Done:
    TYPE: ClassVar[MsgType] = MsgType.DONE
    FRAMES: ClassVar[int] = 0
    version: int


@dataclass(frozen=True, slots=True)
class Reject:
    TYPE: ClassVar[MsgType] = MsgType.REJECT
    FRAMES: ClassVar[int] = 0
    code: str
    detail: str
    version: int  # the hub's current version (what STALE needs); -1 when irrelevant
    retry_after: float  # seconds before retrying (LOCKED_OUT); 0 otherwise


MESSAGE_CLASSES: dict[MsgType, Any] = {
    cls.TYPE: cls
    for cls in (
        PairStart, PairReply, PairFinish, Paired, Join, Welcome, Shard, ShardData, Pull, Model,
        Waiting,
        Push, Ack, Ping, Pong, Bye, Done, Reject,
    )
}

assert set(MESSAGE_CLASSES) == set(MsgType), "every message type needs a class"

TO_HUB = frozenset({MsgType.JOIN, MsgType.SHARD, MsgType.PULL, MsgType.PUSH, MsgType.PING,
                    MsgType.BYE})
TO_PAIRING = frozenset({MsgType.PAIR_START, MsgType.PAIR_FINISH})
