"""A hub session: the protocol core plus evaluation, metrics, checkpoints and the model file.

Still no sockets: the transport feeds ``handle``/``tick`` and sends what they return.
Evaluation of the test split runs on a background thread (torch releases the GIL), and so
do checkpoint writes (``writer``: the state is copied here, written there), so neither a
slow evaluation nor a slow disk holds up the rounds or the replies.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import torch

from .. import __version__
from ..data import ArrayDataset
from ..data.prepared import PrepareProgress, load_data
from ..devices import pick_device
from ..errors import ConfigError
from ..events import (DiskError, Evaluated, Event, Finished, LogLine, ModeChanged, PinChanged,
                      RoundClosed, StateChanged, Stopped, WorkerInfo)
from ..evaluation import eval_ready, evaluate
from ..pacing import Throttle
from ..protocol import PROTOCOL_VERSION, auth
from ..protocol.wire import Frame
from .config import HubConfig, absolute_dataset, absolute_model
from .allowlist import Allowlist, PairedView
from .blocked import BlockedMachines, RemovedMachine
from .keeping import keep
from .paired_machines import PairedMachines
from .augment import augment_line
from .core import HubCore, Reply
from .endpoint import EventSink, HubResult, SessionStatus
from .exports import export_program, failure_text
from .outputs import MODEL_FILE, PROGRAM_FILE, OutputDir
from .presets import Mode
from .shard_check import check_shards
from .tensorboard_log import TensorBoardLog, continues
from .trainer import ParameterServer
from .user_model import build_hub_model, fit_model_to_data, ship_model
from .writer import CheckpointWriter, copy_tensors

log = logging.getLogger(__name__)


ROUND_RECORD = ("round", "version", "loss", "contributors", "rejected", "bytes_in",
                "bytes_out", "payload_bytes", "data_bytes", "model_bytes", "update_bytes",
                "samples", "steps", "seconds", "compute_s", "busy", "lr")
T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Given:
    """What a session is handed from Python (``api.host``) instead of building it from its
    configuration; the configuration still names them (session.json)."""

    model: torch.nn.Module | None = None  # trained as it is, instead of building config.model
    data: tuple[ArrayDataset, ArrayDataset] | None = None  # (train, test), not loaded


PREPARE_LINE_S = 2.0  # a folder being prepared: a line this often (the CLI shows each)


def _every(seconds: float, emit: Callable[[Event], None]) -> Callable[[PrepareProgress], None]:
    """A preparation's progress as a LogLine at most every ``seconds``, and its last one."""
    throttle = Throttle(seconds)

    def report(progress: PrepareProgress) -> None:
        if throttle.due(force=progress.done == progress.total):
            emit(LogLine(progress.text[:1].upper() + progress.text[1:]))
    return report


class HubSession:
    """Runs one training session of the hub."""

    def __init__(self, config: HubConfig, *, pin: str, hub_key: str, out_dir: str | Path,
                 resume: bool = False, on_event: EventSink | None = None,
                 given: Given | None = None, paired: PairedMachines | None = None,
                 blocked: BlockedMachines | None = None, tensorboard: bool = False,
                 host: dict[str, Any] | None = None) -> None:
        """``paired``: the hub's Paired machines, let in without the PIN (None: only the
        machines that pair in this session, or joined it before a resume); ``blocked``: the
        machines its host blocked, refused (None: removals last this session only); ``tensorboard``:
        TensorBoard event files beside metrics.jsonl too (a resume continues them where the
        folder holds some); ``host``: how the session is hosted (its name, port...), kept in
        session.json for a resume (None: what the folder holds)."""
        self.out = OutputDir(out_dir)
        self.disk_errors = 0
        self._disk_warned: set[str] = set()  # what failed to write already (warned once)
        self.sinks: list[EventSink] = [on_event] if on_event else []
        if not resume and self.out.holds_session():
            raise ConfigError(f"{self.out.path} already holds a session: resume it "
                              f"(--resume) or choose another output folder")
        meta = self.out.read_session() if resume else {}
        if resume:
            config = HubConfig.from_json(meta["config"])
        else:  # a file's path absolute: --resume finds it from anywhere
            config = dataclasses.replace(config, model=absolute_model(config.model),
                                         dataset=absolute_dataset(config.dataset),
                                         test_data=absolute_dataset(config.test_data))
        self.config = config
        given = given or Given()
        if given.data is not None:
            train_set, self.test_set = given.data
            self.info = train_set.info
        else:
            train_set, self.test_set = load_data(
                config.dataset, image_size=config.image_size, label=config.label_column,
                test_fraction=config.test_fraction, input=config.input,
                test_spec=config.test_data, progress=_every(PREPARE_LINE_S, self._emit))
            self.info = train_set.info
        self.config = config = fit_model_to_data(config, self.info)
        check_shards(len(train_set), config.workers, config.batch_size)
        self.eval_device = pick_device("auto").device  # the hub evaluates on its best one
        # The user's model, its weights (a resumed session's come from its checkpoint) and
        # how workers get it: all before the session opens, so any error is said now.
        model = given.model if given.model is not None else build_hub_model(
            config, self.info, weights=not (resume and self.out.has_checkpoint()))
        self.server = ParameterServer.for_session(model, config)
        cursors, held = self._restore() if resume else ({}, {})
        self.model = ship_model(model, config, train_set)
        self.server.track(self.model.stat_buffers(), self.model.counters())
        if resume:  # the rounds after the checkpoint are replayed: their records go
            dropped = self._write("metrics", self.out.cut_metrics, self.server.version)
            if dropped:
                log.info("dropped %d metrics records past version %d", dropped,
                         self.server.version)
        self.session_id = meta.get("session_id") or auth.new_nonce()[:16]
        self._paired, self._blocked = paired, blocked  # the per-user lists it keeps
        keys, addresses = self.out.read_allowed() if resume else ({}, {})
        allowlist = Allowlist(keys, addresses, blocked=blocked.machines() if blocked else (),
                              paired=PairedView(tuple(paired.machines()), paired.removed())
                              if paired is not None else None)
        if not resume:
            allowlist.clear()  # a new session: nobody paired, but the hub's paired machines
        self.core = HubCore(config, pin=pin, session_id=self.session_id, hub_key=hub_key,
                            train_set=train_set, server=self.server,
                            fingerprint=self.model.fingerprint, allowlist=allowlist,
                            cursors=cursors, held=held, graph=self.model.graph,
                            describe=self.model.refusal)
        if self.core.augment:  # a choice said to the host, not only in the log file
            self._emit(LogLine(augment_line(self.core.augment)))
        self.out.write_session({"config": config.to_json(), "session_id": self.session_id,
                                "hub_key": hub_key, "fingerprint": self.core.fingerprint,
                                "protocol": PROTOCOL_VERSION, "computeshare": __version__,
                                "parameters": self.server.numel,
                                "compute": self.model.compute,
                                "host": host if host is not None else meta.get("host", {})})
        self._pool = ThreadPoolExecutor(  # named after its session's thread (log scopes)
            max_workers=1, thread_name_prefix=f"{threading.current_thread().name}/eval")
        self._evals: list[tuple[int, Future[tuple[float, float]]]] = []
        self._checkpoints = CheckpointWriter(f"{threading.current_thread().name}/checkpoint")
        self.started = time.monotonic()
        self.training_since: float | None = None  # when the rounds started (not the wait)
        self.last_eval: tuple[int, float, float] | None = None
        board = tensorboard or (resume and continues(self.out.path))
        self.board = self._write("TensorBoard logs", TensorBoardLog, self.out.path,
                                 self.server.version if resume else None) if board else None

    def _restore(self) -> tuple[dict[int, int], dict[str, int]]:
        """Load the checkpoint into the server; each shard's stream position, and the shard
        each worker held."""
        state = self.out.load_checkpoint()
        if state is None:
            log.warning("no checkpoint in %s: starting from version 0", self.out.path)
            return {}, {}
        if "mode" in state:  # preset "auto" may have switched from the configured mode
            mode = Mode(**state["mode"])  # (set first: a switch resets the momentum)
            self.server.set_mode(mode, self.config.outer_for(mode.local_steps),
                                 self.config.outer_lr)
        self.server.restore(state)
        log.info("resumed from checkpoint at version %d", self.server.version)
        held = {str(k): int(v) for k, v in state.get("held", {}).items()}
        return {int(k): int(v) for k, v in state.get("cursors", {}).items()}, held

    def save_checkpoint(self) -> bool:
        """Write checkpoint.pt (weights, optimizer state, version, data positions) and
        return once it and every write before it are on disk.

        False when the disk refused it (a warning and a ``disk_error`` event say so)."""
        version = self._queue_checkpoint()
        return all(v != version for v in self._collect_writes(block=True))

    def _queue_checkpoint(self) -> int:
        """Copy the state now, on the thread that drives the session (never between an
        optimizer step and its version); the writer's thread writes it. Its version."""
        version = self.server.version
        self._checkpoints.submit(version, self.out.save_checkpoint,
                                 copy_tensors(self.core.checkpoint()))
        return version

    def save_stopped(self) -> Path | None:
        """What every early stop writes: the checkpoint and the current weights.

        Call it from the thread that drives the session, once its loop has stopped, so
        the state is whole (never between an optimizer step and its version)."""
        self.save_checkpoint()
        path = self._write("model", self.out.save_model, self.server.model.state_dict())
        self._save_for_people()
        version = self.server.version
        log.info("[hub v%d] stopped early: model and checkpoint saved in %s", version,
                 self.out.path)
        self._emit(Stopped(version, str(self.out.path), str(path) if path else None))
        return path

    def _save_for_people(self) -> None:
        """classes.json and the eval program (trained_model.pt2) beside the .pth, once the
        session is over. A failure is logged and reported (an event) and loses nothing:
        the .pth and the checkpoint are written before."""
        self._write("class names", self.out.save_classes, self.info.class_names)
        if self.info.features:
            self._write("feature names", self.out.save_features, self.info.features)
        began = time.perf_counter()
        try:
            archive = export_program(self.server.model, self.info)
        except Exception as exc:  # torch raises many kinds; none may cost the outputs
            text = failure_text(exc)
            log.warning("[hub v%d] could not export %s: %s", self.server.version, PROGRAM_FILE,
                        text)
            self._emit(LogLine(f"Could not export {PROGRAM_FILE} (the model for "
                               f"torch.export.load): {text}. {MODEL_FILE} is saved."))
            return
        if self._write(f"eval program ({PROGRAM_FILE})", self.out.save_program, archive):
            log.info("[hub v%d] %s exported in %.1f s", self.server.version, PROGRAM_FILE,
                     time.perf_counter() - began)

    # ----------------------------------------------------------------- driven by transport
    def handle(self, peer: bytes, frames: Sequence[Frame], now: float,
               peer_key: str | None) -> list[Reply]:
        """Process one request (see HubCore.handle)."""
        replies = self.core.handle(peer, frames, now, peer_key)
        self._after()
        return replies

    def handle_pairing(self, peer: bytes, frames: Sequence[Frame], now: float,
                       source: str | None = None) -> list[Reply]:
        """Process one pairing request (see HubCore.handle_pairing)."""
        replies = self.core.handle_pairing(peer, frames, now, source)
        self._after()
        return replies

    def set_pin(self, pin: str) -> None:
        """Rotate the PIN: from now on only the new one pairs (paired keys stay)."""
        self.core.pairing.set_pin(auth.check_pin(pin))
        log.info("the session PIN was changed")
        self._emit(PinChanged())

    def allow(self, key: str, name: str) -> None:
        """Allow a worker key this process vouches for (the host's own worker): it joins
        without pairing. A banned key stays banned."""
        if not self.core.allowlist.banned(key):
            self.core.allowlist.add(key, name)
            self._after()

    def kick(self, worker_id: int, block: bool = False) -> bool:
        """Remove a worker and revoke its key; with ``block``, from later sessions too
        (see HubCore.kick)."""
        kicked = self.core.kick(worker_id, block)
        self._after()
        return kicked

    def allow_again(self, key: str) -> bool:
        """Let a removed or blocked machine pair with the PIN again (HubCore.allow_again)."""
        allowed = self.core.allow_again(key)
        self._after()
        return allowed

    def removed_machines(self) -> list[RemovedMachine]:
        """The machines refused now: removed from this session, or blocked (any thread)."""
        return self.core.allowlist.removed()

    def tick(self, now: float) -> list[Reply]:
        """Periodic work (see HubCore.tick) plus finished evaluations."""
        replies = self.core.tick(now)
        self._after()
        self._collect_evals(block=False)
        self._collect_writes(block=False)
        return replies

    def tell_stopping(self) -> list[Reply]:
        """The session stops early: the replies that tell parked workers (see HubCore.stop)."""
        replies = self.core.stop()
        self._after()
        return replies

    @property
    def done(self) -> bool:
        return self.core.done

    @property
    def version(self) -> int:
        """The model version (global steps so far)."""
        return self.server.version

    def allows(self, key: str) -> bool:
        """True when ``key`` may use the encrypted sockets (paired, not banned)."""
        return key in self.core.allowlist

    def removed(self, key: str) -> bool:
        """True when the host removed or blocked ``key``: the request socket lets it in only
        to hear BANNED or BLOCKED (the truth) instead of a refused handshake (read: pair
        with the PIN)."""
        return self.core.allowlist.banned(key)

    def probing(self, key: str) -> bool:
        """True while ``key`` may send network checks (PROBE) to the request socket only
        (hub/probe.py); called from the authenticator's thread."""
        return self.core.probes.allows(key, time.monotonic())

    def all_told(self) -> bool:
        """True when every live worker knows the session is over (see HubCore.all_told)."""
        return self.core.all_told()

    def subscribe(self, sink: EventSink) -> None:
        """Call ``sink`` with every event from now on (on the thread that drives it)."""
        self.sinks.append(sink)

    def status(self) -> SessionStatus:
        """Identity, state, version and workers joined, as the LAN advert shows them."""
        return SessionStatus(self.session_id, self.config, self.core.state.value,
                             self.server.version, len(self.core.members))

    def finish(self) -> HubResult:
        """Final evaluation and the saved model; call once ``done`` is true."""
        self._collect_evals(block=True)
        version = self.server.version
        if self.last_eval is None or self.last_eval[0] != version:
            self._record_eval(version, *evaluate(self._eval_snapshot(), self.test_set))
        _, accuracy, loss = self.last_eval  # type: ignore[misc]
        if self.config.checkpoint_every:
            self.save_checkpoint()
        path = self.out.save_model(self.server.model.state_dict())  # an error here must show
        began = self.training_since if self.training_since is not None else self.started
        result = HubResult(accuracy, loss, version, path, time.monotonic() - began)
        self._save_for_people()  # not in the training's time
        self._emit(Finished(accuracy, loss, version, str(path), result.seconds))
        self._pool.shutdown(wait=True)
        self._close_writer()
        return result

    def close(self) -> None:
        """Stop the evaluation thread, finish the checkpoint writes (idempotent)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._close_writer()

    # ----------------------------------------------------------------- internals
    def _after(self) -> None:
        keep(self.core.allowlist.take_changes(), self.out, self._paired, self._blocked,
             self._write)
        for event in self.core.drain_events():
            if isinstance(event, StateChanged) and event.state == "training" and \
                    self.training_since is None:
                self.training_since = time.monotonic()
            if isinstance(event, RoundClosed):
                self._on_round(event)
            elif isinstance(event, ModeChanged):  # preset "auto" chose: the file says when
                wire = event.to_wire()
                del wire["kind"]
                self._metric({"type": "mode", "version": self.server.version, **wire,
                              "elapsed_s": self._elapsed()})
            self._emit(event)

    def _on_round(self, event: RoundClosed) -> None:
        record = {k: getattr(event, k) for k in ROUND_RECORD}
        if event.staleness is not None:  # async mode
            record.update(staleness=event.staleness, lr_scale=event.lr_scale)
        self._metric({"type": "round", **record, "elapsed_s": self._elapsed()}, event.workers)
        version, c = event.version, self.config
        if event.staleness_histogram is not None:  # async: every eval_every and at the end
            self._metric({"type": "staleness", "version": version,
                          **event.staleness_histogram, "elapsed_s": self._elapsed()})
        previous = version - event.steps

        def due(every: int) -> bool:  # versions advance by the local steps: crossings count
            return bool(every) and version // every > previous // every

        if due(c.eval_every) and version < c.rounds:
            # An evaluation still waiting is out of date: drop it, so evaluations slower
            # than the rounds never pile up model copies (one running, one waiting at most).
            self._evals = [(v, f) for v, f in self._evals if not f.cancel()]
            snapshot = self._eval_snapshot()
            self._evals.append((version, self._pool.submit(evaluate, snapshot, self.test_set)))
        if due(c.checkpoint_every):
            self._queue_checkpoint()
        if due(c.snapshot_every):
            self._write("snapshot", self.out.save_snapshot, version,
                        self.server.model.state_dict(), self._elapsed())

    def _eval_snapshot(self) -> torch.nn.Module:
        """A copy of the hub's model as it is now, on the evaluation device, that eval mode
        reaches: the user's module as it is; a program's (whose mode is fixed) with its
        graph switched to inference (``eval_ready``)."""
        return eval_ready(copy.deepcopy(self.server.model)).to(self.eval_device)

    def _collect_evals(self, block: bool) -> None:
        while self._evals and (block or self._evals[0][1].done()):
            version, future = self._evals.pop(0)
            self._record_eval(version, *future.result())

    def _record_eval(self, version: int, accuracy: float, loss: float) -> None:
        self.last_eval = (version, accuracy, loss)
        final = version >= self.config.rounds
        self._metric({"type": "eval", "version": version, "accuracy": accuracy,
                      "test_loss": loss, "final": final, "elapsed_s": self._elapsed()})
        log.info("[hub v%d] test accuracy %.2f%%", version, 100 * accuracy)
        self._emit(Evaluated(version, accuracy, loss, final))

    def _collect_writes(self, block: bool) -> list[int]:
        """Report the checkpoint writes that failed (see ``_write``); their versions."""
        failed = self._checkpoints.collect(block)
        for _, exc in failed:
            self._disk_error("checkpoint", exc)
        return [v for v, _ in failed]

    def _close_writer(self) -> None:
        for _, exc in self._checkpoints.close():
            self._disk_error("checkpoint", exc)
        if self.board is not None:
            self._write("TensorBoard logs", self.board.close)

    def _metric(self, record: dict[str, Any], workers: Sequence[WorkerInfo] = ()) -> None:
        self._write("metrics", self.out.append_metric, record)
        if self.board is not None:  # --tensorboard: the same record (a round's workers')
            self._write("TensorBoard logs", self.board.add, record, workers)

    def _write(self, what: str, write: Callable[..., T], *args: Any) -> T | None:
        """Run one write; a disk error skips it with a warning and an event, and the
        session goes on (a full disk or a locked file must not end a training)."""
        try:
            return write(*args)
        except OSError as exc:
            self._disk_error(what, exc)
            return None

    def _disk_error(self, what: str, exc: OSError) -> None:
        """Count it; warn (the log and an event) the first time ``what`` fails only."""
        self.disk_errors += 1
        if what in self._disk_warned:
            log.debug("could not write the %s again: %s", what, exc)
            return
        self._disk_warned.add(what)
        log.warning("could not write the %s: %s", what, exc)
        self._emit(DiskError(what, str(exc)))

    def _elapsed(self) -> float:
        return round(time.monotonic() - self.started, 4)

    def _emit(self, event: Event) -> None:
        for sink in self.sinks:
            sink(event)
