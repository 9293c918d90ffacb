"""Whether a session's training split can give every worker a shard. Pure."""

from __future__ import annotations

import logging

from ..errors import ConfigError

log = logging.getLogger(__name__)


def check_shards(samples: int, workers: int, batch_size: int) -> None:
    """Refuse a session whose training split cannot give each of ``workers`` a sample
    (``sampling.shard_indices`` splits it into ``workers`` near-equal parts, so each part
    holds one at least exactly when ``samples >= workers``). A shard smaller than a batch
    is fine: a worker's stream runs through its shard again (``stream_positions``), so its
    batches repeat samples; it is said, not refused.

    Raises:
        ConfigError: fewer training samples than workers (the reason says what to change).
    """
    if samples < workers:
        raise ConfigError(f"the training split has {samples:,} sample(s), fewer than the "
                          f"{workers} workers: each worker's shard needs one at least "
                          f"(give --workers {max(samples, 1)} or fewer, or more training "
                          f"data, e.g. a smaller --test-fraction)")
    if samples // workers < batch_size:
        log.info("each worker's shard holds about %d samples, fewer than the batch size "
                 "%d: its batches repeat samples", samples // workers, batch_size)
