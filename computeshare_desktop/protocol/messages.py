"""The messages of the hub/worker protocol, as frozen msgspec Structs.

Each message class names its wire type (``TYPE``) and how many binary frames follow its
header (``FRAMES``). Field types are deliberately few, and bounded where they are declared
(``Int``, ``Real``, ``Str``, ``Dims`` below), so that ``wire.py`` has msgspec check every
header strictly from the annotations alone.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, ClassVar, Literal

import msgspec

MAX_STR_CHARS = 256
MAX_LIST_ITEMS = 8
MAX_INT = 2**53  # beyond this an int is not exact in a double (what JSON peers may parse)

Int = Annotated[int, msgspec.Meta(ge=-MAX_INT, le=MAX_INT)]
# An int may stand for a float while it is an Int; NaN and infinity pass: the receiver
# judges them (a NaN loss is NOT_FINITE, not MALFORMED).
Real = Int | float
# JSON can spell lone surrogates (\ud800), which no later .encode() accepts: not text.
Str = Annotated[str, msgspec.Meta(max_length=MAX_STR_CHARS,
                                  pattern="\\A[^\\ud800-\\udfff]*\\Z")]
Offset = Annotated[int, msgspec.Meta(ge=0, le=MAX_INT)]  # a position or size in bytes
Dims = Annotated[list[Annotated[int, msgspec.Meta(ge=0, le=2**31)]],
                 msgspec.Meta(max_length=MAX_LIST_ITEMS)]
# The training recipe's choices travel as these words only (the session's options offer
# exactly these: hub/config.py reads them from here).
Optimizer = Literal["sgd", "adamw"]  # the hub's optimizer, and the inner one of local steps
Precision = Literal["auto", "fp32", "bf16", "fp16"]  # each worker resolves it for its device
# Augmentations a worker applies to its training batches (worker/augment.py), in the order
# it applies them whatever the order asked. The Welcome carries them as plain words: a word
# this worker does not know (a newer hub's) is refused by the worker, saying which.
AUGMENTS: tuple[str, ...] = ("crop", "flip", "rotate", "color", "erase")
Words = Annotated[list[Str], msgspec.Meta(max_length=MAX_LIST_ITEMS)]
# How a worker gets the session's model: "builtin", it builds a registry model by name;
# "graph", it fetches the hub's checked graph (GRAPH_GET) after the Welcome.
ComputeKind = Literal["builtin", "graph"]
GraphPart = Literal["manifest", "program", "state"]  # what a GRAPH_GET asks for, in order
# The data's shape, as the Welcome carries it: a worker builds its DatasetInfo from these,
# never from a registry by name, so a session may train on data no registry knows.
MAX_CHANNELS = 64
Channels = Annotated[int, msgspec.Meta(ge=1, le=MAX_CHANNELS)]
Side = Annotated[int, msgspec.Meta(ge=1, le=2**15)]  # an image's height or width
Classes = Annotated[int, msgspec.Meta(ge=1, le=2**20)]
Means = Annotated[list[Annotated[float, msgspec.Meta(ge=-1e3, le=1e3)]],
                  msgspec.Meta(min_length=1, max_length=MAX_CHANNELS)]  # NaN fails the bounds
Stds = Annotated[list[Annotated[float, msgspec.Meta(gt=0, le=1e3)]],
                 msgspec.Meta(min_length=1, max_length=MAX_CHANNELS)]
DataKind = Literal["images", "table"]  # what a sample is: an image, or a table's row
MAX_FEATURES = 2**20
Features = Annotated[int, msgspec.Meta(ge=0, le=MAX_FEATURES)]  # a table's row length
SampleDtype = Literal["uint8", "float32"]  # images travel as uint8, a table's rows float32
# A sha256 as 64 lowercase hex digits, or "" for none (a dataset's content hash, the digest
# of a range of a shard that a worker holds in its cache).
Digest = Annotated[str, msgspec.Meta(pattern="\\A(?:[0-9a-f]{64})?\\Z")]


class MsgType(str, Enum):
    """Message types; the value travels as the header's ``t`` field."""

    PAIR_START = "pair_start"  # worker -> hub (pairing socket): SPAKE2 message A
    PAIR_REPLY = "pair_reply"  # hub -> worker: SPAKE2 message B
    PAIR_FINISH = "pair_finish"  # worker -> hub: worker key + key confirmation
    PAIRED = "paired"  # hub -> worker: hub key + key confirmation
    JOIN = "join"  # worker -> hub (encrypted socket): take a shard
    WELCOME = "welcome"  # hub -> worker: membership, shard and session configuration
    GRAPH_GET = "graph_get"  # worker -> hub: a byte range of one part of the model's graph
    GRAPH_DATA = "graph_data"  # hub -> worker: those bytes
    GRAPH_REFUSED = "graph_refused"  # worker -> hub: this machine refuses the graph (why)
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
    PROBE = "probe"  # doctor -> hub, before pairing: a network check (hub/probe.py)
    PROBE_REPLY = "probe_reply"  # hub -> doctor: its key, then the bytes a probe asked for


class SessionState(str, Enum):
    """Where a hub session stands."""

    WAITING = "waiting"  # waiting for the expected workers
    TRAINING = "training"  # rounds are running
    DONE = "done"  # finished; the model is saved
    STOPPED = "stopped"  # stopped before the end (saved; can be resumed): workers must go


class Message(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The base of every message: its fields are the header's, besides ``t``."""

    TYPE: ClassVar[MsgType]
    FRAMES: ClassVar[int] = 0


class PairStart(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.PAIR_START
    FRAMES: ClassVar[int] = 0
    msg_a: Str  # SPAKE2 message, hex
    name: Str


class PairReply(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.PAIR_REPLY
    FRAMES: ClassVar[int] = 0
    pair_id: Str
    msg_b: Str  # SPAKE2 message, hex


class PairFinish(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.PAIR_FINISH
    FRAMES: ClassVar[int] = 0
    pair_id: Str
    worker_key: Str  # the worker's long-term CURVE public key, Z85
    proof: Str  # key confirmation covering worker_key and name


class Paired(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.PAIRED
    FRAMES: ClassVar[int] = 0
    hub_key: Str  # the hub's long-term CURVE public key, Z85
    session_id: Str
    proof: Str  # key confirmation covering hub_key and session_id


class Join(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.JOIN
    FRAMES: ClassVar[int] = 0
    name: Str
    device: Str
    torch: Str  # the worker's torch release ("2.14.1"): a graph needs the hub's


class Welcome(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.WELCOME
    FRAMES: ClassVar[int] = 0
    session_id: Str
    worker_id: Int
    token: Str
    shard: Int
    num_shards: Int
    shard_size: Int
    dataset: Str
    model: Str
    fingerprint: Str
    batch_size: Int
    seed: Int
    rounds: Int
    codec: Str
    state: Str
    version: Int
    # The recipe a worker computes with (the learning rate comes with each MODEL):
    optimizer: Optimizer  # the inner optimizer of local steps (gradients: the hub's)
    weight_decay: Real  # AdamW's decoupled decay in local steps (SGD: the hub applies it)
    label_smoothing: Real  # of the training loss, in [0, 1)
    clip_grad: Real  # local steps: each step's gradient norm is clipped to it; 0: off
    precision: Precision
    compute: ComputeKind  # builtin: build `model` by name; graph: fetch it (GRAPH_GET)
    torch: Str  # the hub's torch release; a graph is refused under another release
    # The data (``dataset`` is its name, for people): one image's shape, the classes, and
    # the per-channel normalisation of images scaled to [0, 1]. Class names stay on the hub.
    channels: Channels
    height: Side
    width: Side
    num_classes: Classes
    mean: Means  # one per channel (the worker checks the counts)
    std: Stds
    # The training split's content hash (data.digests.content_hash): with the shard plan,
    # what keys a worker's shard cache; "": the worker caches nothing.
    data_hash: Digest = ""
    # How the worker augments its training batches (AUGMENTS' words); empty: it does not.
    augment: Words = []
    # "table": the samples are rows of ``features`` standardized float32 values (the hub
    # standardized them; channels, height, width, mean and std are then 1, 1, 1, [0], [1]).
    data_kind: DataKind = "images"
    features: Features = 0
    # How the hub applies updates, for the worker's window to name (7): "sync" or "async",
    # and its aggregation ("mean", "trimmed-mean" or "median").
    updates: Str = "sync"
    aggregation: Str = "mean"


class GraphGet(Message, frozen=True):
    """The bytes of ``part`` from ``offset`` on, as many as one GRAPH_DATA carries (no
    frames)."""

    TYPE: ClassVar[MsgType] = MsgType.GRAPH_GET
    token: Str
    part: GraphPart
    offset: Offset


class GraphData(Message, frozen=True):
    """A range of a part: its frame is bytes [offset, offset + len) of ``total``."""

    TYPE: ClassVar[MsgType] = MsgType.GRAPH_DATA
    part: GraphPart
    offset: Offset
    total: Offset
    FRAMES: ClassVar[int] = 1


class GraphRefusal(Message, frozen=True):
    """The worker refuses the hub's graph and leaves (as BYE does), saying why in
    ``reason``: one line, GraphRefused.reason (no frames)."""

    TYPE: ClassVar[MsgType] = MsgType.GRAPH_REFUSED
    token: Str
    reason: Str
    # The graph's node (or tensor) it concerns, GraphRefused.where: the hub, which kept each
    # node's layer (workers get none), names it ("rnn: nn.LSTM"). "": none, or an older worker.
    where: Str = ""


class Shard(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.SHARD
    FRAMES: ClassVar[int] = 0
    token: Str
    offset: Int
    count: Int
    # The sha256 (data.digests.chunk_digest) of the samples [offset, offset + count) this
    # worker holds in its cache; "": none. The hub answers ``same`` when it is its own.
    have: Digest = ""


class ShardData(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.SHARD_DATA
    FRAMES: ClassVar[int] = 2  # uint8 images (N, C, H, W), int64 labels (N,)
    offset: Int
    total: Int
    image_shape: Dims
    same: bool = False  # the worker's ``have`` is this range's digest: both frames are
    # empty and the worker keeps what it holds (image_shape still says the range's shape)
    dtype: SampleDtype = "uint8"  # of the samples frame: a table's rows are float32 (N, F)


class Pull(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.PULL
    FRAMES: ClassVar[int] = 0
    token: Str
    after: Int  # the newest version the worker has; -1 for none
    wait_ms: Int  # how long the hub may hold the request
    fingerprint: Str


class Model(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.MODEL
    FRAMES: ClassVar[int] = 2  # the weights, encoded with `codec`; the running statistics
    # (a graph's: raw float32 in the manifest's `stats` order; empty for a built-in)
    version: Int
    codec: Str
    numel: Int
    base: Int  # -1: the frame is the whole model; else a delta from version `base`
    check: Str  # fingerprint of the weights of `version` (codec.delta.weights_check)
    start: Int  # this round's work: samples [start, start + steps*batch) of the shard's stream
    batch: Int  # samples per step
    steps: Int  # 0: push the gradient of one batch; H >= 1: take H local steps, push the change
    lr: Real  # learning rate of the local steps
    momentum: Real  # momentum kept on the worker (sparse pushes); 0: the hub keeps it
    push_codec: Str  # how to encode the push
    topk: Real  # the top-k fraction, when push_codec is topk


class Waiting(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.WAITING
    FRAMES: ClassVar[int] = 0
    version: Int
    state: Str


class Push(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.PUSH
    FRAMES: ClassVar[int] = 2  # the gradient (steps 0) or the weight change, encoded; the
    # change of the running statistics over the work (raw float32; empty for a built-in)
    token: Str
    version: Int
    codec: Str
    numel: Int
    loss: Real
    samples: Int  # samples processed, all steps together
    steps: Int  # as in the MODEL this answers
    compute_ms: Real
    bandwidth: Real  # the worker's measured download rate in bytes/s; 0 when unknown


class Ack(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.ACK
    FRAMES: ClassVar[int] = 0
    version: Int


class Ping(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.PING
    FRAMES: ClassVar[int] = 0
    token: Str


class Pong(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.PONG
    FRAMES: ClassVar[int] = 0
    version: Int
    state: Str


class Bye(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.BYE
    FRAMES: ClassVar[int] = 0
    token: Str
    # 7: the worker pauses (its person, or on battery): the hub frees its shard for others
    # and shows it as paused; it comes back with a JOIN, without the PIN
    paused: bool = False


class Done(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.DONE
    FRAMES: ClassVar[int] = 0
    version: Int


class Reject(Message, frozen=True):
    TYPE: ClassVar[MsgType] = MsgType.REJECT
    FRAMES: ClassVar[int] = 0
    code: Str
    detail: Str
    version: Int  # the hub's current version (what STALE needs); -1 when irrelevant
    retry_after: Real  # seconds before retrying (LOCKED_OUT); 0 otherwise


PROBE_MAX_BYTES = 4 * 1024 * 1024  # of a PROBE's upload frame and of its reply's frame


class Probe(Message, frozen=True):
    """A network check (``computeshare doctor``), allowed before pairing. On the pairing
    port, ``key`` asks the hub to let that throwaway key probe its encrypted port briefly
    (the frame is empty); there, the frame is an upload and ``size`` the bytes asked back."""

    TYPE: ClassVar[MsgType] = MsgType.PROBE
    FRAMES: ClassVar[int] = 1
    key: Str  # the prober's throwaway CURVE public key, Z85 ("" on the encrypted port)
    size: Offset  # bytes asked back (at most PROBE_MAX_BYTES)


class ProbeReply(Message, frozen=True):
    """The hub's answer to a PROBE: its frame holds ``size`` bytes (none on the pairing
    port). ``hub_key`` is not authenticated there: good for a measurement, not for trust."""

    TYPE: ClassVar[MsgType] = MsgType.PROBE_REPLY
    FRAMES: ClassVar[int] = 1
    hub_key: Str  # the hub's CURVE public key, Z85
    session_id: Str  # as its LAN advert says (the doctor matches the two)
    size: Offset
    numel: Offset  # the session's model parameters (the doctor's preset estimate)
    ttl: Real  # seconds the probing key has left


MESSAGE_CLASSES: dict[MsgType, type[Message]] = {
    cls.TYPE: cls
    for cls in (
        PairStart, PairReply, PairFinish, Paired, Join, Welcome, GraphGet, GraphData,
        GraphRefusal, Shard, ShardData, Pull, Model, Waiting,
        Push, Ack, Ping, Pong, Bye, Done, Reject, Probe, ProbeReply,
    )
}

assert set(MESSAGE_CLASSES) == set(MsgType), "every message type needs a class"

TO_HUB = frozenset({MsgType.JOIN, MsgType.GRAPH_GET, MsgType.GRAPH_REFUSED, MsgType.SHARD,
                    MsgType.PULL, MsgType.PUSH, MsgType.PING, MsgType.BYE})
TO_PAIRING = frozenset({MsgType.PAIR_START, MsgType.PAIR_FINISH})
# A network check: a stranger's PROBE on the pairing port, then a probing key's on the
# encrypted one (hub/probe.py); never part of a worker's requests.
PROBES = frozenset({MsgType.PROBE})
