"""The subcommands: thin glue between arguments, the cores and the terminal."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import torch

from ..discovery import SessionBrowser, describe, discover, pick_session
from ..discovery.hub_advert import resolve_interface
from ..errors import ConfigError
from ..evaluation import evaluate_file
from ..events import Listening
from ..hub import HubConfig
from ..hub.presets import resolve
from ..selftest import self_test as run_self_test
from ..service import (HostPlan, HostService, JoinPlan, JoinService, JoinTarget, Tagged,
                       remembers)
from ..service.host import PIN_ENV
from ..service.options import worker_name
from ..worker import pick_device
from .progress import HubView, WorkerView
from .terminal import is_terminal

DEFAULT_ROUNDS = 600  # a sync session's; an async round is one worker's batch
INTERRUPTED = 130  # the exit code of a hub stopped by Ctrl-C or SIGTERM (its model is saved)


def _config(args: argparse.Namespace, workers: int) -> HubConfig:
    asynchronous = args.mode == "async"
    preset, mode = resolve(args.preset, codec=args.codec, topk=args.topk,
                           local_steps=args.local_steps)
    if asynchronous and preset == "auto":  # auto tunes rounds; async has none to measure
        preset = "lan"
    rounds = args.rounds if args.rounds is not None else \
        DEFAULT_ROUNDS * (workers if asynchronous else 1)
    return HubConfig(dataset=args.dataset, model=args.model, workers=workers,
                     rounds=rounds, batch_size=args.batch_size, lr=args.lr,
                     updates=args.mode, max_staleness=args.max_staleness,
                     aggregation=args.aggregate,
                     seed=args.seed, eval_every=args.eval_every, preset=preset,
                     codec=mode.codec, topk=mode.topk, topk_warmup=args.topk_warmup,
                     local_steps=mode.local_steps,
                     outer=args.outer, outer_lr=args.outer_lr, balance=not args.no_balance,
                     snapshot_every=args.snapshot_every)


def _interfaces(args: argparse.Namespace) -> list[str] | None:
    chosen = getattr(args, "interface", None)
    return [resolve_interface(i) for i in chosen] if chosen else None


@contextmanager
def _stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """Ctrl-C, SIGTERM (and Windows' Ctrl-Break) call ``stop``: the service finishes the
    request it is handling, so the state it saves is whole. A second Ctrl-C quits at once."""
    asked = threading.Event()

    def handler(signum: int, frame: object) -> None:
        if asked.is_set():
            raise KeyboardInterrupt
        asked.set()
        stop()

    if threading.current_thread() is not threading.main_thread():
        yield  # signals can only be handled on the main thread
        return
    wanted = [getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGBREAK")
              if hasattr(signal, name)]
    previous = {sig: signal.signal(sig, handler) for sig in wanted}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def this_command() -> list[str]:
    """How to start this command line again in a child process: the ``computeshare``
    executable itself in a frozen bundle, else this Python with the package's CLI module."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "computeshare_desktop.cli"]


def _run_until_done(service: HostService | JoinService) -> None:
    """Wait for the service's thread, stopping it on Ctrl-C or SIGTERM; raise its error."""
    with _stop_on_signals(service.stop):
        while not service.wait(0.2):
            pass
    if service.error is not None:
        raise service.error


def _host_plan(args: argparse.Namespace, *, out: str, bind: str, port: int | None,
               advertise: bool, pin: str = "") -> HostPlan:
    return HostPlan(_config(args, args.workers), Path(out), resume=getattr(args, "resume", False),
                    pin=pin, port=port, bind=bind,
                    interfaces=tuple(_interfaces(args) or ()) or None, advertise=advertise,
                    name=getattr(args, "name", None) or "")


def host(args: argparse.Namespace) -> int:
    """Run a hub until done."""
    plan = _host_plan(args, out=args.out or "computeshare-run", bind=args.bind,
                      port=args.port, advertise=not args.no_advertise, pin=args.pin or "")
    view = HubView(quiet=args.quiet)
    service = HostService(plan, on_event=view.on)
    view.service = service
    try:
        _run_until_done(service.start())
    finally:
        view.close()
    return 0 if service.result is not None else INTERRUPTED


def sessions(args: argparse.Namespace) -> int:
    """List the sessions on the LAN, once or live."""
    interfaces = _interfaces(args)
    if not args.watch:
        found = discover(args.scan, interfaces=interfaces)
        for session in found:
            _print_session(session, args.json)
        if not found and not args.json:
            print("no ComputeShare session found on the LAN (multicast may be blocked: "
                  "workers can still join with the hub's address)")
        return 0
    last: list[str] = []

    def show(found: list) -> None:
        nonlocal last
        lines = [describe(x) for x in found]
        if lines != last:
            last = lines
            print(f"-- {len(found)} session(s) --", flush=True)
            for session in found:
                _print_session(session, args.json)

    with SessionBrowser(interfaces=interfaces, on_change=show):
        threading.Event().wait()  # until Ctrl-C
    return 0


def _print_session(session, as_json: bool) -> None:
    if as_json:
        advert = session.advert
        print(json.dumps({**{f: getattr(advert, f) for f in advert.__dataclass_fields__},
                          "addresses": list(session.addresses), "address": session.address}),
              flush=True)
    else:
        print(describe(session), flush=True)


def _worker_pin(args: argparse.Namespace, required: bool = True) -> str:
    """The PIN from ``--pin``, the environment or a prompt (kept out of ``ps``); not asked
    for when the hub's key is remembered (``required`` false): it may not be needed."""
    pin = args.pin or os.environ.get(PIN_ENV)
    if not pin and not required:
        return ""
    if not pin and is_terminal(sys.stdin):
        try:
            pin = getpass.getpass("session PIN (shown on the hub): ").strip()
        except EOFError:
            pin = ""
    if not pin:
        raise ConfigError(f"a PIN is needed: type it at the prompt, or set {PIN_ENV}")
    return pin


def _join_target(args: argparse.Namespace) -> JoinTarget:
    """The hub of ``args.address``, else the session found on the LAN."""
    if args.address:
        return JoinTarget.from_address(args.address)
    found = pick_session(discover(args.scan, interfaces=_interfaces(args)), args.session)
    print(f"joining {describe(found)}", flush=True)
    return JoinTarget.from_session(found)


def join(args: argparse.Namespace) -> int:
    """Run a worker until the hub says the session is done."""
    name = args.name or worker_name()
    target = _join_target(args)
    pin = _worker_pin(args, required=not remembers(target, name))
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    if device.note:
        print(f"note: {device.note}", file=sys.stderr)
    if args.max_rate < 0:
        raise ConfigError("--max-rate must be positive (or 0: no limit)")
    view = WorkerView(quiet=args.quiet)
    service = JoinService(JoinPlan(target, pin=pin, name=name, label=args.name or "", device=device,
                                   give_up_s=args.give_up, max_rate=args.max_rate,
                                   follow_hub=False, wait_s=max(0.0, args.wait)),
                          on_event=view.on)
    try:
        _run_until_done(service.start())
    finally:
        view.close()
    result = service.result
    if result is None:
        return INTERRUPTED
    print(f"session finished: {result.pushed} gradients pushed, {result.rejected} refused, "
          f"on {device.description}")
    return 0


def demo(args: argparse.Namespace) -> int:
    """A hub plus ``--workers`` local worker processes on loopback."""
    plan = _host_plan(args, out=args.out or "computeshare-demo", bind="127.0.0.1", port=0,
                      advertise=False)
    view = HubView(quiet=args.quiet, show_pin=False)
    procs: list[subprocess.Popen[bytes]] = []
    threads = max(1, (os.cpu_count() or 1) // max(1, args.workers))

    def on_event(tagged: Tagged) -> None:
        view.on(tagged)
        if isinstance(tagged.event, Listening):  # the workers join as soon as it listens
            env = {**os.environ, PIN_ENV: service.pin}
            cmd = [*this_command(), "join",
                   f"127.0.0.1:{tagged.event.port}", "--quiet", "--device", "cpu",
                   "--threads", str(threads)]
            procs.extend(subprocess.Popen([*cmd, "--name", f"demo-{i + 1}"], env=env,
                                          stdout=subprocess.DEVNULL)
                         for i in range(args.workers))

    service = HostService(plan, on_event=on_event)
    view.service = service
    try:
        _run_until_done(service.start())
    finally:
        view.close()
        _reap(procs)
    return 0 if service.result is not None else INTERRUPTED


def _reap(procs: list[subprocess.Popen[bytes]], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def evaluate(args: argparse.Namespace) -> int:
    """Print the test accuracy of a saved model."""
    path = Path(args.model_file)
    meta = path.parent / "session.json"
    saved = json.loads(meta.read_text(encoding="utf-8")).get("config", {}) if meta.exists() else {}
    dataset = args.dataset or saved.get("dataset", "mnist-sample")
    model_name = args.model or saved.get("model", "simplenet")
    score = evaluate_file(path, model_name, dataset)
    if args.json:
        print(json.dumps({"accuracy": score.accuracy, "loss": score.loss, "dataset": dataset,
                          "model": model_name, "samples": score.samples}))
    else:
        print(f"test accuracy: {100 * score.accuracy:.2f}% (loss {score.loss:.4f}) on "
              f"{score.samples} {dataset} test images")
    return 0


def self_test(args: argparse.Namespace) -> int:
    """Check this install end to end (the same checks as ``computeshare-desktop --self-test``)."""
    return run_self_test()
