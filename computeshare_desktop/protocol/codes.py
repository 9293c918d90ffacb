"""Reject codes: every refusal on the wire is one of these, with a one-line meaning."""

from __future__ import annotations

from enum import Enum


class RejectCode(str, Enum):
    """Why the hub refused a request. The value is what travels on the wire."""

    MALFORMED = "MALFORMED"  # the frames do not parse as a message of this protocol
    VERSION_MISMATCH = "VERSION_MISMATCH"  # the peer speaks another protocol version
    BAD_PIN = "BAD_PIN"  # the PIN proof did not verify
    LOCKED_OUT = "LOCKED_OUT"  # too many wrong PINs: pairing is paused for retry_after s
    UNKNOWN_CHALLENGE = "UNKNOWN_CHALLENGE"  # the pairing run expired, was used, or never existed
    NOT_PAIRED = "NOT_PAIRED"  # this key is not (or no longer) allowed: pair with the PIN
    BUSY = "BUSY"  # too many pairings at once: retry after retry_after s
    UNKNOWN_WORKER = "UNKNOWN_WORKER"  # the token is not (or no longer) a member: join again
    SESSION_FULL = "SESSION_FULL"  # every shard is taken by a live worker
    SESSION_DONE = "SESSION_DONE"  # training is over: stop
    ARCH_MISMATCH = "ARCH_MISMATCH"  # the worker's model is not the hub's architecture
    STALE = "STALE"  # gradient computed on an old model version; version says the current
    BAD_VERSION = "BAD_VERSION"  # gradient claims a version the hub never published
    DUPLICATE = "DUPLICATE"  # this worker already pushed for this version
    BAD_SHAPE = "BAD_SHAPE"  # tensor sizes or dtypes do not match what the hub expects
    NOT_FINITE = "NOT_FINITE"  # the gradient or loss contains NaN or infinity
    TOO_LARGE = "TOO_LARGE"  # a frame or its decompressed content exceeds its cap
    BAD_CODEC = "BAD_CODEC"  # unknown codec, or a payload the codec cannot decode
    BAD_RANGE = "BAD_RANGE"  # a requested range (shard offset/count) is out of bounds
    BAD_INDEX = "BAD_INDEX"  # sparse indices out of range, repeated or out of order
    NOT_TRAINING = "NOT_TRAINING"  # the hub is not accepting gradients right now
    HUB_STOPPED = "HUB_STOPPED"  # the hub is stopping (its user stopped it): leave now
    BANNED = "BANNED"  # this key was removed from this session: not again in it
    BLOCKED = "BLOCKED"  # the host blocked this machine: none of its sessions, until allowed
    TORCH_MISMATCH = "TORCH_MISMATCH"  # a graph needs the hub's torch release on the worker


MEANINGS: dict[RejectCode, str] = {
    RejectCode.MALFORMED: "the message could not be parsed",
    RejectCode.VERSION_MISMATCH: "the hub speaks another protocol version: update ComputeShare",
    RejectCode.BAD_PIN: "wrong PIN",
    RejectCode.LOCKED_OUT: "too many wrong PINs; pairing is paused",
    RejectCode.UNKNOWN_CHALLENGE: "the pairing attempt expired; try again",
    RejectCode.NOT_PAIRED: "this machine is not paired with the hub (or was removed)",
    RejectCode.BUSY: "the hub is busy pairing other machines; try again shortly",
    RejectCode.UNKNOWN_WORKER: "the hub does not know this worker (it may have restarted)",
    RejectCode.SESSION_FULL: "the session already has all the workers it expects",
    RejectCode.SESSION_DONE: "the session has finished",
    RejectCode.ARCH_MISMATCH: "this machine builds a different model architecture",
    RejectCode.STALE: "gradient computed on an old model version",
    RejectCode.BAD_VERSION: "gradient claims a version the hub never published",
    RejectCode.DUPLICATE: "this worker already pushed a gradient for this version",
    RejectCode.BAD_SHAPE: "tensor sizes do not match the model",
    RejectCode.NOT_FINITE: "gradient contains NaN or infinity",
    RejectCode.TOO_LARGE: "payload larger than allowed",
    RejectCode.BAD_CODEC: "payload could not be decoded",
    RejectCode.BAD_RANGE: "requested range is out of bounds",
    RejectCode.BAD_INDEX: "sparse payload has indices out of range, repeated or unsorted",
    RejectCode.NOT_TRAINING: "the hub is not training right now",
    RejectCode.HUB_STOPPED: "the hub stopped the session",
    RejectCode.BANNED: "this machine was removed from the session by its host",
    RejectCode.BLOCKED: "the host blocked this machine from its sessions",
    RejectCode.TORCH_MISMATCH: "the hub ships its model as a graph, which needs the same "
                               "torch release on this machine",
}

assert set(MEANINGS) == set(RejectCode), "every reject code needs a meaning"
