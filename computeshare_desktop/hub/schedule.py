"""The rounds of a session: the work each worker is given, which pushes count, when a round
closes, and the optimizer step that ends it. Pure: the caller passes ``now`` and the members.

Versions count global steps, so a session of R rounds trains the same samples in every
mode: a round of H local steps advances the version by H, and the last is cut short to
land on R. Each shard is read as a stream (see ``sampling``); its cursor moves on by the
samples of each push that counted, so a replacement worker carries on where the last
stopped and a worker's batch can change size from round to round.
"""

from __future__ import annotations

import logging
import statistics
from typing import Any, Sequence

import torch

from ..codec import get_codec
from ..errors import RemoteProtocolError
from ..events import Event, ModeChanged, RoundClosed
from ..protocol import RejectCode
from ..protocol.graphs import stats_from_frame
from ..protocol.messages import Push
from ..protocol.wire import Frame
from .config import HubConfig
from .membership import Member
from .planner import WorkPlanner
from .presets import AUTO, PROBE_ROUNDS, AutoTuner, topk_density
from .robust import NormClipper, combine
from .rounds import Contribution, DeadlinePolicy, Round, Task, check_push
from .trainer import ParameterServer

log = logging.getLogger(__name__)

DEFAULT_BANDWIDTH = 1e6  # bytes/s assumed for deadlines until workers have measured theirs
MAX_BATCH_FACTOR = 4.0  # the largest share of work a fast worker gets, in nominal batches
OPENED_HISTORY = 256  # versions whose opening time is kept (late pushes still teach latency)


class Schedule:
    """Plans, collects and closes the rounds of one session."""

    def __init__(self, config: HubConfig, server: ParameterServer,
                 cursors: dict[int, int] | None = None, *, epoch_steps: int = 0) -> None:
        """``epoch_steps``: global steps in one pass over the training set (top-k's warm-up
        lasts that long, at most a tenth of the session)."""
        self.config, self.server = config, server
        self.warmup = (config.topk_warmup if config.topk_warmup >= 0
                       else min(epoch_steps, config.rounds // 10))
        self.deadlines = DeadlinePolicy(config.deadline_floor_s, config.deadline_factor,
                                        cap_s=config.deadline_cap_s)
        self.planner = WorkPlanner(config.batch_size, balance=config.balance,
                                   max_factor=MAX_BATCH_FACTOR)
        self.cursors: dict[int, int] = dict(cursors or {})  # next sample of each shard's stream
        self.tuner = AutoTuner(config.preset == AUTO and server.version < PROBE_ROUNDS)
        self.round = Round(server.version, 0.0)
        self._opened: dict[int, float] = {}  # when recent versions were published
        self.clipper = NormClipper() if config.aggregation != "mean" else None

    # ----------------------------------------------------------------- planning
    def open(self, now: float, ready: list[Member]) -> None:
        """Plan the next round: each worker's batch, the local steps and their lr."""
        version = self.server.version
        plan = self.planner.plan([m.worker_id for m in ready])
        lr = self.server.lr_for(sum(plan.values()) or self.config.batch_size)
        steps = min(self.server.local_steps, max(1, self.config.rounds - version))
        topk = topk_density(self.server.mode.topk, version, self.warmup)
        self.round = Round(version, now, plan=self._batches(plan), lr=lr, steps=steps,
                           topk=topk)
        self._opened[version] = now
        for old in [v for v in self._opened if v < version - OPENED_HISTORY]:
            del self._opened[old]

    def _batches(self, plan: dict[int, int]) -> dict[int, int]:
        """The per-step batch of each worker this round (the planner's shares)."""
        return plan

    def task(self, member: Member, shard_size: int) -> Task:
        """This round's work for ``member``: the same for every download of the version."""
        version, task = self.server.version, member.task
        if task is None or task.version != version:
            batch = min(self.round.plan.get(member.worker_id, self.config.batch_size),
                        max(1, shard_size))
            task = Task(version, self.cursors.get(member.shard, 0), batch, self.round.steps,
                        self.round.lr)
            member.assign(task)
        return task

    # ----------------------------------------------------------------- pushes
    def accept(self, member: Member, msg: Push, body: Sequence[Frame], shard_size: int,
               now: float) -> None:
        """Count a push (its frames: the update, the statistics' change) towards the round,
        or raise RemoteProtocolError with why not."""
        version = self.server.version
        task = self.task(member, shard_size)
        if msg.version < version:
            opened = self._opened.get(msg.version)
            if opened is not None:  # late, but it tells how slow this worker is
                self.deadlines.observe(member.worker_id, now - opened)
            raise RemoteProtocolError(RejectCode.STALE, f"current version is {version}")
        if msg.version > version:
            raise RemoteProtocolError(RejectCode.BAD_VERSION, f"current version is {version}")
        if member.shard in self.round.contributions:  # per shard: a rejoin is no new batch
            raise RemoteProtocolError(RejectCode.DUPLICATE, f"shard already pushed for {version}")
        self._add(member, msg, body, task, now)
        self.deadlines.observe(member.worker_id, now - self.round.opened_at)

    def _add(self, member: Member, msg: Push, body: Sequence[Frame], task: Task, now: float,
             staleness: int = 0) -> None:
        """Check and decode a push for ``task`` and add it to the round (``staleness``:
        async, versions between the update's model and this round's)."""
        check_push(msg, task, self.server.numel)
        payload = body[0]
        codec = get_codec(msg.codec)
        update = codec.decode(payload, msg.numel)
        if not codec.finite and not bool(torch.isfinite(update).all()):
            raise RemoteProtocolError(RejectCode.NOT_FINITE, "update contains NaN/inf")
        stats = stats_from_frame(body[1], self.server.stats_numel)
        if stats is not None and not bool(torch.isfinite(stats).all()):
            raise RemoteProtocolError(RejectCode.NOT_FINITE, "statistics contain NaN/inf")
        compute_s = min(max(0.0, msg.compute_ms) / 1000, 1e6)
        self.round.add(Contribution(member.worker_id, member.shard, update, msg.samples,
                                    msg.loss, compute_s, stats), now,
                       len(payload) + len(body[1]), staleness)
        self.planner.observe(member.worker_id, msg.samples, compute_s)
        member.credit(msg.version, msg.samples, compute_s, msg.bandwidth, now)

    def forget(self, worker_id: int) -> None:
        """A worker left: stop waiting for it and drop what was learned about it."""
        self.deadlines.forget(worker_id)
        self.planner.forget(worker_id)

    # ----------------------------------------------------------------- closing
    def due(self, now: float, ready: list[Member]) -> bool | None:
        """None while the round stays open; else whether it closes complete."""
        rnd = self.round
        if not rnd.contributions:
            return None
        expected = {m.shard for m in ready}
        if rnd.complete(expected):
            return True
        assert rnd.first_push_at is not None
        missing = expected - rnd.contributions.keys()
        deadline = self.deadlines.deadline(rnd.opened_at, rnd.first_push_at,
                                           {m.worker_id for m in ready},
                                           self._transfer_s(len(missing), ready))
        if now < deadline:
            return None
        log.warning("[hub v%d] deadline: closing with %d of %d shards", rnd.version,
                    len(rnd.contributions), len(expected | rnd.contributions.keys()))
        return False

    def close(self, now: float, complete: bool, members: list[Member]) -> list[Event]:
        """Average the updates, step, move the shards' streams on; the events it makes."""
        rnd = self.round
        update, loss = self._combine(rnd)
        items = rnd.contributions.values()
        samples = sum(c.samples for c in items)
        self._step(rnd, update, samples, self._combine_stats(rnd))
        seconds = now - rnd.opened_at
        busy = {c.worker_id: min(1.0, c.compute_s / seconds) if seconds > 0 else 1.0
                for c in items}
        for c in items:
            self.cursors[c.shard] = self.cursors.get(c.shard, 0) + c.samples
        for m in members:
            if m.worker_id in busy:
                m.note_busy(busy[m.worker_id])
        slowest = max(c.compute_s for c in items)
        event = RoundClosed(
            round=self.server.version, version=self.server.version,
            steps=self.server.version - rnd.version, loss=loss,
            contributors=len(rnd.contributions), rejected=rnd.rejected,
            bytes_in=rnd.bytes_in, bytes_out=rnd.bytes_out, payload_bytes=rnd.payload_bytes,
            samples=samples, seconds=seconds, complete=complete, compute_s=slowest,
            busy=sum(busy.values()) / len(busy), workers=tuple(m.info() for m in members),
            lr=self._step_lr(rnd), **self._round_extras(rnd))
        return [event, *self._tune(slowest, max(0.0, seconds - slowest), members)]

    def _step_lr(self, rnd: Round) -> float:
        """The learning rate of a round just stepped: the workers' inner rate with local
        steps, else the rate the hub's optimizer stepped at."""
        if self.server.local_steps:
            return rnd.lr
        return float(self.server.optimizer.param_groups[0]["lr"])

    def _round_extras(self, rnd: Round) -> dict[str, Any]:
        """More fields for the round's event (async mode: its staleness)."""
        return {}

    def _combine(self, rnd: Round) -> tuple[torch.Tensor, float]:
        """The round's update and loss: the sample-weighted mean, or a robust rule."""
        if self.clipper is None:
            return rnd.average()
        items = rnd.ordered()
        updates = self.clipper.clip([c.grad for c in items])
        return (combine(updates, self.config.aggregation),
                statistics.median(c.loss for c in items))

    def _combine_stats(self, rnd: Round) -> torch.Tensor | None:
        """The round's change of the running statistics: the sample-weighted mean, or
        with a robust rule the same rule as the updates (never clipped: they are no
        gradients); None when none travel."""
        if self.clipper is None:
            return rnd.stats_average()
        changes = [c.stats for c in rnd.ordered() if c.stats is not None]
        return combine(changes, self.config.aggregation) if changes else None

    def _step(self, rnd: Round, update: torch.Tensor, samples: int,
              stats: torch.Tensor | None = None) -> None:
        """The optimizer step that ends a round of ``samples`` samples (all steps)."""
        self.server.step(update, samples // max(1, rnd.steps), steps=max(1, rnd.steps),
                         topk=rnd.topk, stats=stats)

    def stuck(self, pushed: set[int], ready: list[Member]) -> list[Member]:
        """After a round closed with the shards in ``pushed``: the members that have now
        missed max_missed deadlines in a row (alive, but stuck)."""
        out = []
        for member in ready:
            if member.closed_round(member.shard in pushed) >= self.config.max_missed:
                out.append(member)
        return out

    def idle(self, now: float, ready: list[Member]) -> list[Member]:
        """Members stuck by the clock rather than by rounds (async mode); none here."""
        return []

    def _tune(self, compute_s: float, other_s: float,
              members: list[Member]) -> list[Event]:
        """Preset "auto": after the probe rounds, switch to the preset the link calls for."""
        preset = self.tuner.observe(compute_s, other_s)
        if preset is None:
            return []
        log.info("[hub v%d] auto: a round is %.3f s of compute and %.3f s of the rest: %s "
                 "(%s, %d local steps)", self.server.version, self.tuner.compute_s,
                 self.tuner.other_s, preset.label, preset.mode.codec, preset.mode.local_steps)
        if preset.mode != self.server.mode:
            self.server.set_mode(preset.mode, self.config.outer_for(preset.mode.local_steps),
                                 self.config.outer_lr)
        rates = [m.bandwidth for m in members if m.bandwidth > 0]
        return [ModeChanged(preset.name, preset.mode.codec, preset.mode.topk,
                            preset.mode.local_steps, self.tuner.compute_s, self.tuner.other_s,
                            statistics.median(rates) if rates else 0.0)]

    def _transfer_s(self, missing: int, members: list[Member]) -> float:
        """How long ``missing`` pushes the size of this round's largest take to arrive."""
        rates = [m.bandwidth for m in members if m.bandwidth > 0]
        rate = statistics.median(rates) if rates else DEFAULT_BANDWIDTH
        return missing * self.round.largest_push / rate

    def checkpoint(self) -> dict[str, object]:
        """What a resumed session needs: the optimizer, the mode, each shard's stream."""
        return {**self.server.state(), "cursors": dict(self.cursors),
                "mode": self.server.mode.to_json()}
