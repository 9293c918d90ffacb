"""Who is in the session: tokens, shards, heartbeats. Pure: the caller passes ``now``."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..events import WorkerInfo
from ..protocol.pake import key_fingerprint
from .rounds import Task

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Member:
    """One worker as the hub sees it.

    Its fields change only through the methods below (the hub core, the membership and the
    schedules call them), so ``grep`` finds every change to a member here.
    """

    worker_id: int
    token: str
    name: str
    device: str
    shard: int
    joined_at: float
    last_seen: float
    key: str = ""  # the CURVE public key it authenticated with
    ready: bool = False  # has asked for a model: rounds wait for it from now on
    pushed: int = 0
    rejected: int = 0
    samples: int = 0
    compute_s: float = 0.0
    batch: int = 0  # its per-step batch in the current round (its share of the work)
    busy: float = 0.0  # compute time / round time, in its last round
    bandwidth: float = 0.0  # its download rate in bytes/s, as it reported (0: unknown)
    task: Task | None = None  # the work it was given with its latest model
    missed: int = 0  # rounds in a row that closed at their deadline without its push
    pushed_version: int = -1  # async: the version of its latest accepted update
    progress_at: float = 0.0  # async: when it last pushed an update (or became ready)
    returning: str = ""  # why this machine (its key) left before: paused, silent... ("": new)

    def seen(self, now: float) -> None:
        """It sent a request now (heartbeats count)."""
        self.last_seen = now

    def mark_ready(self, now: float) -> None:
        """It asked for a model: rounds wait for it from now on."""
        self.ready = True
        self.progress_at = now

    def assign(self, task: Task) -> None:
        """Its work for a round (its share of the batch), sent with the model."""
        self.task = task
        self.batch = task.batch

    def credit(self, version: int, samples: int, compute_s: float, bandwidth: float,
               now: float) -> None:
        """Its update computed on ``version`` was accepted (``bandwidth`` 0: not measured)."""
        if bandwidth > 0:
            self.bandwidth = bandwidth
        self.pushed += 1
        self.samples += samples
        self.compute_s += compute_s
        self.progress_at = now
        self.pushed_version = version

    def refused(self) -> None:
        """One of its pushes was rejected."""
        self.rejected += 1

    def note_busy(self, busy: float) -> None:
        """Its compute time / the round time, in the round that just closed."""
        self.busy = busy

    def closed_round(self, pushed: bool) -> int:
        """A round closed, with its push or without; the rounds in a row it has missed."""
        self.missed = 0 if pushed else self.missed + 1
        return self.missed

    def take_over(self, earlier: "Member", why: str) -> None:
        """The same machine, back (after a pause, a lost connection): its earlier id and
        counts, so the hub's table keeps one row whose Pushed counts all its gradients, as
        the worker's own total does."""
        self.worker_id, self.returning = earlier.worker_id, why
        self.pushed, self.rejected = earlier.pushed, earlier.rejected
        self.samples, self.compute_s = earlier.samples, earlier.compute_s

    def info(self) -> WorkerInfo:
        """What progress events say about this worker."""
        return WorkerInfo(self.worker_id, self.name, self.device, self.shard, self.pushed,
                          self.rejected, self.samples, self.ready, round(self.compute_s, 3),
                          self.batch, round(self.busy, 3),
                          key_fingerprint(self.key) if self.key else "")


class Membership:
    """Admits workers onto free shards and reaps the silent ones."""

    def __init__(self, num_shards: int, heartbeat_timeout_s: float,
                 held: dict[str, int] | None = None) -> None:
        """``held``: the shard each worker key (else name) held, from a checkpoint."""
        self.num_shards = num_shards
        self.timeout = heartbeat_timeout_s
        self._by_token: dict[str, Member] = {}
        self._next_id = 1
        # The shard each worker key (else name) last held: a worker that comes back gets it
        # again while it is free, so the samples it keeps in its cache are the ones it needs.
        self._held: dict[str, int] = dict(held or {})
        # Machines (by key) that left and may come back, with why they left: a machine that
        # comes back takes its earlier id and counts again (Member.take_over).
        self._gone: dict[str, tuple[Member, str]] = {}

    def __len__(self) -> int:
        return len(self._by_token)

    def members(self) -> list[Member]:
        """Live members, by worker id."""
        return sorted(self._by_token.values(), key=lambda m: m.worker_id)

    def held(self) -> dict[str, int]:
        """The shard each worker key (else name) last held (a checkpoint keeps it)."""
        return dict(self._held)

    def free_shard(self, prefer: int | None = None) -> int | None:
        """``prefer`` if no live member holds it, else the lowest shard no live member
        holds, or None when all are taken."""
        taken = {m.shard for m in self._by_token.values()}
        if prefer is not None and 0 <= prefer < self.num_shards and prefer not in taken:
            return prefer
        return next((s for s in range(self.num_shards) if s not in taken), None)

    def admit(self, token: str, name: str, device: str, now: float,
              key: str = "") -> Member | None:
        """Add a worker on the shard it last held if that is free, else on the lowest free
        shard; None when the session is full."""
        who = key or name
        shard = self.free_shard(self._held.get(who))
        if shard is None:
            return None
        self._held[who] = shard
        member = Member(self._next_id, token, self._unique(name, key), device, shard, now, now,
                        key=key)
        earlier = self._gone.pop(key, None) if key else None
        if earlier is not None:
            member.take_over(*earlier)
        else:
            self._next_id += 1
        self._by_token[token] = member
        log.info("worker %d (%s, %s) joined on shard %d", member.worker_id, name, device, shard)
        return member

    def _unique(self, name: str, key: str) -> str:
        """``name``, or ``name #2``... when another machine already uses it (two app
        instances on one computer are both named after it)."""
        taken = {m.name for m in self._by_token.values() if m.key != key}
        if name not in taken:
            return name
        return next(f"{name} #{n}" for n in range(2, len(taken) + 3)
                    if f"{name} #{n}" not in taken)

    def get(self, token: str, now: float) -> Member | None:
        """The member holding ``token``, marked as seen now; None if unknown."""
        member = self._by_token.get(token)
        if member is not None:
            member.seen(now)
        return member

    def get_quiet(self, token: str) -> Member | None:
        """The member holding ``token`` without marking it as seen."""
        return self._by_token.get(token)

    def remove(self, token: str, reason: str, why: str = "") -> Member | None:
        """Drop a member and free its shard; ``why`` (paused, silent...): its key may come
        back, under the same id (admit)."""
        member = self._by_token.pop(token, None)
        if member is not None and why and member.key:
            self._gone[member.key] = (member, why)
        if member is not None:
            log.info("worker %d (%s) left: %s; shard %d is free", member.worker_id,
                     member.name, reason, member.shard)
        return member

    def reap(self, now: float) -> list[Member]:
        """Remove and return the members silent for longer than the heartbeat timeout."""
        dead = [m for m in self._by_token.values() if now - m.last_seen > self.timeout]
        for member in dead:
            self.remove(member.token, f"silent for {now - member.last_seen:.1f} s", "silent")
        return dead
