"""The configuration of one hub session."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..codec import CODECS
from ..errors import ConfigError


@dataclass(frozen=True, slots=True)
class HubConfig:
    """Everything that defines a training session; saved as session.json."""

    dataset: str = "mnist-sample"
    model: str = "simplenet"
    workers: int = 2  # number of shards = workers expected before training starts
    rounds: int = 600  # global batches (model versions) to train
    batch_size: int = 32  # per worker and round
    lr: float = 0.01  # base learning rate; the step uses lr * gradients averaged
    momentum: float = 0.9
    seed: int = 0  # initial weights, shard split and batch order
    codec: str = "zstd"  # for gradients and model snapshots
    eval_every: int = 100  # rounds between test-set evaluations (0: only at the end)
    checkpoint_every: int = 50  # rounds between resumable checkpoints (0: never)
    heartbeat_timeout_s: float = 6.0  # silence after which a worker is declared dead
    deadline_floor_s: float = 2.0  # a round never closes early for a missing worker before this
    deadline_factor: float = 4.0  # ... nor before this many times the median full round
    long_poll_ms: int = 2000  # the longest a PULL is held before WAITING

    def __post_init__(self) -> None:
        checks = [
            (self.workers >= 1, "workers must be at least 1"),
            (self.rounds >= 1, "rounds must be at least 1"),
            (self.batch_size >= 1, "batch size must be at least 1"),
            (self.lr > 0, "learning rate must be positive"),
            (0 <= self.momentum < 1, "momentum must be in [0, 1)"),
            (self.codec in CODECS, f"codec must be one of {', '.join(CODECS)}"),
            (self.eval_every >= 0 and self.checkpoint_every >= 0, "intervals must be >= 0"),
            (self.heartbeat_timeout_s > 0 and self.deadline_floor_s > 0, "timeouts must be > 0"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)

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
