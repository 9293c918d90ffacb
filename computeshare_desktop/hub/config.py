"""The configuration of one hub session."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..codec import CODECS, DEFAULT_FRACTION
from ..errors import ConfigError
from .presets import PRESET_CHOICES, Mode


OUTER_OPTIMIZERS = ("auto", "sgd", "nesterov")
UPDATE_MODES = ("sync", "async")
AGGREGATIONS = ("mean", "trimmed-mean", "median")


@dataclass(frozen=True, slots=True)
class HubConfig:
    """Everything that defines a training session; saved as session.json."""

    dataset: str = "mnist-sample"
    model: str = "simplenet"
    workers: int = 2  # number of shards = workers expected before training starts
    rounds: int = 600  # global batches (model versions) to train
    batch_size: int = 32  # per worker and round
    lr: float = 0.01  # for batch_size samples; a round steps with lr * its samples / batch_size
    momentum: float = 0.9
    seed: int = 0  # initial weights, shard split and batch order
    codec: str = "zstd"  # how workers encode pushes; model deltas use it too (see codec.delta)
    topk: float = DEFAULT_FRACTION  # the fraction of values a top-k encoding keeps
    topk_warmup: int = -1  # rounds of top-k warm-up (from 25% down); -1: a tenth of the
    # session, one epoch at most; 0: none (benchmarks of the steady state)
    local_steps: int = 0  # 0: push a gradient per round; H >= 1: H local SGD steps, push the change
    outer: str = "auto"  # outer optimizer of local steps: sgd, nesterov; auto: nesterov if H > 1
    outer_lr: float = 0.7  # the Nesterov outer learning rate (DiLoCo's)
    balance: bool = True  # size each worker's batch to its speed so that all finish together
    preset: str = "custom"  # lan/wifi/slow: where these settings came from; auto: tune them
    eval_every: int = 100  # rounds between test-set evaluations (0: only at the end)
    checkpoint_every: int = 50  # rounds between resumable checkpoints (0: never)
    snapshot_every: int = 0  # rounds between copies of the weights kept in snapshots/ (0: none)
    heartbeat_timeout_s: float = 6.0  # silence after which a worker is declared dead
    deadline_floor_s: float = 2.0  # a round never closes early for a missing worker before this
    deadline_factor: float = 4.0  # ... nor before this many times the median full round
    deadline_cap_s: float = 60.0  # ... but a round waits at most this (plus bytes on the wire)
    max_missed: int = 3  # a worker that misses this many deadlines in a row loses its shard
    long_poll_ms: int = 2000  # the longest a PULL is held before WAITING
    updates: str = "sync"  # sync: rounds of every worker's update; async: each update is
    # applied as it arrives (a round, and a version, is then one worker's batch)
    max_staleness: int = 8  # async: an update computed this many versions back still counts
    aggregation: str = "mean"  # sync rounds: mean; trimmed-mean or median (robust, with
    # norm clipping, against faulty or poisoned workers; async clips norms only)

    def __post_init__(self) -> None:
        checks = [
            (self.workers >= 1, "workers must be at least 1"),
            (self.rounds >= 1, "rounds must be at least 1"),
            (self.batch_size >= 1, "batch size must be at least 1"),
            (self.lr > 0, "learning rate must be positive"),
            (0 <= self.momentum < 1, "momentum must be in [0, 1)"),
            (self.codec in CODECS, f"codec must be one of {', '.join(CODECS)}"),
            (0 < self.topk <= 1, "the top-k fraction must be in (0, 1]"),
            (self.topk_warmup >= -1, "the top-k warm-up must be -1 (automatic), 0 or more"),
            (self.local_steps >= 0, "local steps must be >= 0"),
            (self.outer in OUTER_OPTIMIZERS,
             f"the outer optimizer must be one of {', '.join(OUTER_OPTIMIZERS)}"),
            (self.outer_lr > 0, "the outer learning rate must be positive"),
            (self.preset in (*PRESET_CHOICES, "custom"),
             f"preset must be one of {', '.join(PRESET_CHOICES)}"),
            (min(self.eval_every, self.checkpoint_every, self.snapshot_every) >= 0,
             "intervals must be >= 0"),
            (self.heartbeat_timeout_s > 0 and self.deadline_floor_s > 0, "timeouts must be > 0"),
            (self.deadline_cap_s > 0, "the deadline cap must be positive"),
            (self.max_missed >= 1, "max missed deadlines must be at least 1"),
            (self.updates in UPDATE_MODES, f"updates must be one of {', '.join(UPDATE_MODES)}"),
            (self.max_staleness >= 0, "the staleness bound must be >= 0"),
            (self.aggregation in AGGREGATIONS,
             f"aggregation must be one of {', '.join(AGGREGATIONS)}"),
            (not self.asynchronous or self.local_steps == 0,
             "async mode applies gradients: local steps need sync rounds"),
            (not self.asynchronous or self.preset not in ("auto", "slow"),
             "async mode applies gradients as they arrive: choose the lan or wifi preset, or "
             "a codec"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)

    @property
    def asynchronous(self) -> bool:
        """Updates are applied as they arrive, not in rounds."""
        return self.updates == "async"

    @property
    def mode(self) -> Mode:
        """The mode the session starts in (``preset="auto"`` may change it)."""
        return Mode(self.codec, self.topk, self.local_steps)

    def outer_for(self, local_steps: int) -> str:
        """``sgd`` or ``nesterov``: what ``outer="auto"`` means for these local steps."""
        if self.outer != "auto":
            return self.outer
        return "nesterov" if local_steps > 1 else "sgd"

    def to_json(self) -> dict[str, object]:
        """A plain dict for session.json."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> "HubConfig":
        """Inverse of ``to_json``; unknown keys are a ConfigError."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ConfigError(f"unknown session settings: {', '.join(sorted(unknown))}")
        return cls(**data)  # type: ignore[arg-type]
