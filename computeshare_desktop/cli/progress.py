"""Progress display for the command line: a tqdm bar fed by hub or worker events."""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any

from tqdm import tqdm

from ..errors import ExitCode
from ..events import (AllRefused, Advertising, Evaluated, Finished, Handlers, Joined,
                      LeaveReason, Listening, LogLine, ModelReceived, ModelRefused, ModeChanged,
                      Pushed, Resumed, RoundClosed, Stopped, WorkerInfo, WorkerJoined,
                      WorkerLeft)
from ..service import Tagged


class TqdmHandler(logging.Handler):
    """Log lines that do not break the progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        tqdm.write(self.format(record), file=sys.stderr)


def setup_logging(verbose: int) -> None:
    """Warnings by default; -v for info, -vv for debug."""
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    handler = TqdmHandler()
    handler.setFormatter(logging.Formatter("%(levelname).1s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


class RoundBar:
    """A bar over rounds with a postfix; silent when ``quiet``."""

    def __init__(self, total: int, *, quiet: bool, initial: int = 0, desc: str = "training"):
        self.bar = None if quiet else tqdm(total=total, initial=initial, desc=desc, unit="round",
                                          dynamic_ncols=True, file=sys.stderr)
        self.postfix: dict[str, str] = {}

    def advance(self, position: int, **postfix: str) -> None:
        """Move to round ``position``, with new postfix values."""
        if self.bar is not None:
            self.bar.update(max(0, position - self.bar.n))
        self.set(**postfix)

    def set(self, **postfix: str) -> None:
        """Update postfix values."""
        self.postfix.update(postfix)
        if self.bar is not None:
            self.bar.set_postfix(self.postfix, refresh=False)

    def reset(self, total: int, position: int = 0) -> None:
        """A new total and starting point (a resumed session, a worker joining one under way):
        the clock starts again there, so the rate and the time left count only the rounds
        done from now on, not the ones done before as if done in the first second."""
        if self.bar is not None:
            self.bar.reset(total)
            self.bar.n = self.bar.last_print_n = self.bar.initial = position
            self.bar.refresh()

    def start_at(self, position: int) -> None:
        """The same total, counted from ``position`` on (see reset)."""
        if self.bar is not None:
            self.reset(self.bar.total or 0, position)

    def write(self, line: str) -> None:
        """A line above the bar (stderr)."""
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        """Finish the bar."""
        if self.bar is not None:
            self.bar.close()


RULE = "!" * 78  # sets the lines that say nobody can train the model apart from the others


def all_refused_text(e: AllRefused) -> str:
    """What ``host`` says when every worker refused the model: who, why, and what follows."""
    code = ExitCode.MODEL_REFUSED
    return (f"{RULE}\n"
            f"!! NO WORKER CAN TRAIN THIS MODEL: {e.who()} refused it, and "
            f"none is left.\n"
            f"!! The last, {e.name}: {e.reason}\n"
            f"!! Waiting {e.grace_s:.0f} s for another worker; then host ends (exit code "
            f"{code.value}). Ctrl-C stops it now.\n"
            f"{RULE}")


RETURNING = {"paused": "resumed"}  # a machine back under its id (WorkerJoined.returning)


class HubView:
    """What ``host`` and ``demo`` show: the PIN and address, a bar, the result."""

    def __init__(self, *, quiet: bool, show_pin: bool = True) -> None:
        self.bar = RoundBar(0, quiet=quiet)
        self.quiet, self.show_pin = quiet, show_pin
        self.service: Any = None  # the HostService (its PIN and session)
        self.handlers = (Handlers()
                         .on(Listening, self._listening).on(Advertising, self._advertising)
                         .on(LogLine, lambda e: self.bar.write(e.text))
                         .on(RoundClosed, self._round).on(ModeChanged, self._mode)
                         .on(Evaluated, lambda e: self.bar.set(acc=f"{100 * e.accuracy:.1f}%"))
                         .on(WorkerJoined, lambda e: self._worker(e.worker, RETURNING.get(
                             e.returning, "rejoined" if e.returning else "joined")))
                         .on(WorkerLeft, lambda e: self._worker(
                             e.worker, "paused" if e.reason == LeaveReason.PAUSED else "left"))
                         .on(ModelRefused, lambda e: self.bar.write(
                             f"worker {e.name} cannot train the model: {e.reason}"))
                         .on(AllRefused, self._all_refused)
                         .on(Finished, self._finished).on(Stopped, self._stopped))

    def on(self, tagged: Tagged) -> None:
        """Show one event of the host service (on its thread)."""
        if tagged.source == "hub":
            self.handlers.dispatch(tagged.event)

    def _listening(self, e: Listening) -> None:
        session = getattr(self.service, "session", None)
        if session is not None:
            self.bar.reset(session.config.rounds, session.version)
        if not self.show_pin:
            return
        host = socket.gethostname()
        print(f"hub listening on {e.bind}:{e.port} (events {e.pub_port}, pairing "
              f"{e.pair_port}); hub key {e.hub_key}\n"
              f"session PIN: {self.service.pin}\n"
              f"  on each worker: computeshare join {host}:{e.port}, then type the PIN",
              flush=True)

    def _advertising(self, e: Advertising) -> None:
        if self.show_pin:
            print(f"  announced on the LAN as “{e.name}”: there, computeshare join finds it "
                  "by itself", flush=True)

    def _round(self, e: RoundClosed) -> None:
        self.bar.advance(e.version, loss=f"{e.loss:.3f}", workers=str(len(e.workers)),
                         wire=f"{(e.bytes_in + e.bytes_out) / 1e3:.0f}kB",
                         busy=f"{100 * e.busy:.0f}%")

    def _mode(self, e: ModeChanged) -> None:
        if not self.quiet:
            self.bar.write(f"auto: {e.preset} preset ({e.codec}, {e.local_steps} local steps) "
                           f"for a {8 * e.bandwidth / 1e6:.0f} Mbit/s link")

    def _worker(self, w: WorkerInfo, verb: str) -> None:
        if not self.quiet:
            self.bar.write(f"worker {w.id} ({w.name}, {w.device}) {verb}")

    def _all_refused(self, e: AllRefused) -> None:
        """Said even with --quiet, set apart from the lines around it: nobody trains."""
        self.bar.write(all_refused_text(e))

    def _finished(self, e: Finished) -> None:
        self.bar.close()
        print(f"final test accuracy: {100 * e.accuracy:.2f}% after {e.version} rounds in "
              f"{e.seconds:.1f} s; model saved to {e.model_path}", flush=True)

    def _stopped(self, e: Stopped) -> None:
        self.bar.close()
        saved = f"model saved to {e.model_path}" if e.model_path else \
            "the model could not be saved"
        print(f"\nstopped at version {e.version}; {saved}; continue with computeshare host "
              f"--resume --out {e.out_dir}", file=sys.stderr, flush=True)

    def close(self) -> None:
        self.bar.close()


class WorkerView:
    """What ``join`` shows: a bar over the rounds this worker sees."""

    def __init__(self, *, quiet: bool) -> None:
        self.bar = RoundBar(0, quiet=quiet, desc="worker")
        self.counting = False  # the first push after joining sets where the rate starts
        self.handlers = (Handlers().on(Joined, self._joined)
                         .on(ModelReceived, lambda e: self.bar.write(e.describe()))
                         .on(Resumed, lambda e: self.bar.write(
                             "resuming: joining the session again"))
                         .on(Pushed, self._pushed))

    def on(self, tagged: Tagged) -> None:
        """Show one event of the join service (on its thread)."""
        self.handlers.dispatch(tagged.event)

    def _joined(self, e: Joined) -> None:
        self.bar.reset(e.rounds)
        self.counting = False

    def _pushed(self, e: Pushed) -> None:
        position = e.version + max(1, e.steps)
        if not self.counting:  # joined at round 74: the rate counts from its first push on
            self.counting = True
            self.bar.start_at(position)
        self.bar.advance(position, loss=f"{e.loss:.3f}",
                         pushed=str(e.pushed), rejected=str(e.rejected))

    def close(self) -> None:
        self.bar.close()
