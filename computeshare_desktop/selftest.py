"""``computeshare-desktop --self-test`` and ``computeshare self-test``: does this install work?

Meant for a frozen bundle (PyInstaller) on a machine with no window: every step drives the
code the app itself runs, on loopback and in a temporary folder, and prints one line::

    ok  Qt offscreen platform (0.3 s): ...
    FAIL zeroconf on loopback: <reason>

A failed step does not stop the others, so the report is complete; the exit code is 0 only
when every step passed. No Qt here: the Qt step imports ``gui.qt_app`` (and so PySide6) only
when it runs, so a broken Qt still lets the other steps report.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, TextIO


from .defaults import HOME_ENV
from .discovery import Advertiser, DiscoveredSession, SessionAdvert, SessionBrowser
from .evaluation import evaluate_file
from .events import RoundClosed
from .protocol import PROTOCOL_VERSION
from .service import AppConfig, HostOptions, HostService, Tagged
from .service.options import host_plan
from .worker import pick_device

LOOPBACK = "127.0.0.1"
DATASET, MODEL, ROUNDS = "mnist-sample", "simplenet", 30
# 30 rounds of batch 256 at lr 0.02 reach 0.77 test accuracy on mnist-sample (seed 0, the
# one used; 0.67-0.80 over seeds 0-9, where smaller batches or larger rates sometimes fell
# below 0.5). Chance is 0.10: the bound, well below every measurement and far above chance,
# tells a working pipeline from a broken one.
BATCH, LR, MIN_ACCURACY = 256, 0.02, 0.5
STOP_GRACE_S = 10.0  # after a timeout, how long a stopped session gets to close its sockets


@dataclass(frozen=True, slots=True)
class Step:
    """One check: ``run(limit_s)`` returns a short detail for its ok line, or raises."""

    name: str
    run: Callable[[float], str]
    limit_s: float
    main_thread: bool = False  # Qt wants its QApplication on the main thread


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one step went."""

    ok: bool
    seconds: float
    detail: str  # the ok line's detail, or why it failed


@dataclass(slots=True)
class Workspace:
    """What the steps share: a temporary folder and the training step's results."""

    root: Path
    model_path: Path | None = None
    hub_accuracy: float | None = None


# ----------------------------------------------------------------- the runner
def run_steps(steps: list[Step], out: TextIO | None = None, *,
              grace_s: float = STOP_GRACE_S) -> int:
    """Run every step, print one line each; 0 when all passed, 1 otherwise."""
    out = out or sys.stdout
    failed = 0
    for step in steps:
        outcome = run_one(step, grace_s)
        failed += not outcome.ok
        print(line(step, outcome), file=out, flush=True)
    return 0 if failed == 0 else 1


def line(step: Step, outcome: Outcome) -> str:
    """The report line of one step."""
    if outcome.ok:
        detail = f": {outcome.detail}" if outcome.detail else ""
        return f"ok  {step.name} ({outcome.seconds:.1f} s){detail}"
    return f"FAIL {step.name}: {outcome.detail} ({outcome.seconds:.1f} s)"


def run_one(step: Step, grace_s: float = STOP_GRACE_S) -> Outcome:
    """Run ``step`` within its time limit; any exception is a failure with its message.

    Off the main thread, a step still running ``grace_s`` after its limit is abandoned (a
    daemon thread): steps bound their own blocking calls and clean up after a timeout, so
    this only catches one that hangs past them. On the main thread (Qt), an overrun is
    reported once the step returns.
    """
    started = time.monotonic()
    result: list[Outcome] = []

    def body() -> None:
        try:
            detail = step.run(step.limit_s)
            result.append(Outcome(True, time.monotonic() - started, detail))
        except Exception as exc:  # a step's failure is its report line, whatever it is
            result.append(Outcome(False, time.monotonic() - started, _reason(exc)))

    if step.main_thread:
        body()
    else:
        worker = threading.Thread(target=body, name=f"cs-selftest-{step.name}", daemon=True)
        worker.start()
        worker.join(step.limit_s + grace_s)
    elapsed = time.monotonic() - started
    if not result:
        return Outcome(False, elapsed, f"did not finish within {step.limit_s:g} s")
    outcome = result[0]
    if outcome.ok and outcome.seconds > step.limit_s:
        return Outcome(False, outcome.seconds, f"took longer than {step.limit_s:g} s")
    return outcome


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


@contextmanager
def environment(name: str, value: str) -> Iterator[None]:
    """Set an environment variable for the duration, then restore it (or remove it)."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


# ----------------------------------------------------------------- the steps
def check_qt(limit_s: float) -> str:
    """The Qt offscreen platform loads, with the app's style sheet, icon and fonts."""
    with environment("QT_QPA_PLATFORM", "offscreen"):
        from .gui.qt_app import qt_self_check  # PySide6 loads here, and only here

        return qt_self_check()


def check_training(work: Workspace, limit_s: float) -> str:
    """A hub and one local worker pair over 127.0.0.1 and train ROUNDS rounds."""
    out_dir = work.root / "run"
    options = HostOptions(dataset=DATASET, model=MODEL, rounds=ROUNDS, batch_size=BATCH,
                          workers=1, lr=LR, out_dir=str(out_dir), train_here=True,
                          eval_every=0, port=0, advertise=False, preset="lan")
    plan = host_plan(options, AppConfig(interfaces=(LOOPBACK,), bind=LOOPBACK),
                     device=pick_device("cpu"))
    rounds: list[int] = []

    def on_event(tagged: Tagged) -> None:
        if tagged.source == "hub" and isinstance(tagged.event, RoundClosed):
            rounds.append(tagged.event.round)

    service = HostService(plan, on_event=on_event).start()
    if not service.wait(limit_s):
        service.stop()
        service.join(STOP_GRACE_S)
        raise TimeoutError(f"training stopped after {len(rounds)} of {ROUNDS} rounds: "
                           f"not done within {limit_s:.0f} s")
    if service.error is not None:
        raise service.error
    result = service.result
    if result is None:
        raise RuntimeError(f"the session ended early, after {len(rounds)} rounds")
    if max(rounds, default=0) != ROUNDS or result.version < ROUNDS:
        raise RuntimeError(f"the hub reported {max(rounds, default=0)} rounds (model "
                           f"version {result.version}), not {ROUNDS}")
    if not result.model_path.is_file():
        raise RuntimeError(f"{result.model_path} was not written")
    work.model_path, work.hub_accuracy = result.model_path, result.accuracy
    return f"{ROUNDS} rounds of {DATASET} on {LOOPBACK}:{service.port} in " \
           f"{result.seconds:.1f} s, {result.model_path.name} saved"


def check_evaluation(work: Workspace, limit_s: float) -> str:
    """The saved model loads and scores well above chance on the test split."""
    if work.model_path is None:
        raise RuntimeError("no trained model to evaluate (the training step failed)")
    score = evaluate_file(work.model_path, MODEL, DATASET)
    accuracy = score.accuracy
    if not accuracy > MIN_ACCURACY:
        raise RuntimeError(f"test accuracy {accuracy:.1%} is not above {MIN_ACCURACY:.0%}")
    if work.hub_accuracy is not None and abs(accuracy - work.hub_accuracy) > 1e-6:
        raise RuntimeError(f"the saved model scores {accuracy:.2%}, the hub said "
                           f"{work.hub_accuracy:.2%}: the file is not the model it trained")
    return f"test accuracy {accuracy:.1%} (loss {score.loss:.3f}) on {score.samples} images"


def check_zeroconf(limit_s: float) -> str:
    """An advert registered on 127.0.0.1 is browsed there, then withdrawn."""
    session_id = uuid.uuid4().hex[:16]
    advert = SessionAdvert(session_id=session_id, name="ComputeShare self-test",
                           host="self-test", model=MODEL, dataset=DATASET, joined=0,
                           expected=1, state="waiting", protocol=PROTOCOL_VERSION,
                           key_fingerprint="0" * 16, port=9, pub_port=10, pair_port=11)
    seen, gone = threading.Event(), threading.Event()

    def on_change(sessions: list[DiscoveredSession]) -> None:
        if any(s.advert.session_id == session_id for s in sessions):
            seen.set()
        elif seen.is_set():
            gone.set()

    deadline = time.monotonic() + limit_s
    with SessionBrowser(interfaces=[LOOPBACK], on_change=on_change, check_interval_s=0.25,
                        probe_timeout_s=0.5, resolve_timeout_s=2.0) as browser:
        advertiser = Advertiser(advert, interfaces=[LOOPBACK]).start()
        try:
            if not seen.wait(max(0.1, deadline - time.monotonic())):
                raise TimeoutError("the advert was registered but not found by browsing")
            found = next(s for s in browser.sessions() if s.advert.session_id == session_id)
            if found.advert != advert:
                raise RuntimeError("the browsed advert differs from the registered one")
        finally:
            advertiser.close()
        if not gone.wait(max(0.1, deadline - time.monotonic())):
            raise TimeoutError("the advert was withdrawn but browsing still sees it")
    return f"registered, found at {found.address} and withdrawn"


def default_steps(work: Workspace) -> list[Step]:
    """The checks of a whole install, in order (evaluation needs training's model)."""
    return [
        Step("Qt offscreen platform", check_qt, 30.0, main_thread=True),
        Step("hub + 1 worker training on loopback", lambda limit: check_training(work, limit),
             120.0),
        Step("evaluating the saved model", lambda limit: check_evaluation(work, limit), 30.0),
        Step("zeroconf on loopback", check_zeroconf, 15.0),
    ]


def self_test(out: TextIO | None = None) -> int:
    """Run every check in a temporary folder, with ``COMPUTESHARE_HOME`` there too (no real
    keys or settings are read or written); 0 when all passed, 1 otherwise."""
    out = out or sys.stdout
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="computeshare-selftest-",
                                     ignore_cleanup_errors=True) as folder:
        root = Path(folder)
        with environment(HOME_ENV, str(root / "home")):
            code = run_steps(default_steps(Workspace(root)), out)
    verdict = "all checks passed" if code == 0 else "some checks FAILED"
    print(f"self-test: {verdict} in {time.monotonic() - started:.1f} s", file=out, flush=True)
    return code
