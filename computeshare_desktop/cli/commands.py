"""The subcommands: thin glue between arguments, the cores and the terminal."""

from __future__ import annotations

import argparse
import dataclasses
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
from typing import Any, Callable, Iterator


from ..discovery import SessionBrowser, describe, discover, pick_session
from ..discovery.hub_advert import resolve_interface
from ..errors import ConfigError, ExitCode, RejectedError, RemovedError
from ..data.tables import is_table_spec
from ..evaluation import data_info, evaluate_file, program_alone
from ..events import Listening
from ..hub.config import MODE_OPTIONS, SessionOptions
from ..hub.outputs import CLASSES_FILE, FEATURES_FILE, SESSION_FILE, SessionFile
from ..join_options import JoinOptions
from ..model_file_options import ModelFileOptions
from ..predict import Predictor, Unread, load_predictor, read_classes
from ..protocol.auth import typed_pin
from ..schema import check, default, defaults, from_args
from ..selftest import self_test as run_self_test
from ..stored import Damaged, load_stored
from ..service import (HostPlan, HostService, JoinPlan, JoinService, JoinTarget, Tagged,
                       join_plan,
                       remembers)
from ..service.comeback import run_coming_back
from ..service.join import removed_by
from ..service.host import PIN_ENV
from ..service.paired import forget_hub
from ..service.options import HOSTED, AppConfig, HostOptions, host_plan, worker_name
from ..worker import DeviceChoice, pick_device
from .cache import cache as cache  # `computeshare cache` (main runs commands by name)
from .progress import HubView, WorkerView
from .terminal import is_terminal


def _options(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """``cls``'s options on this command: its defaults, then the flags given."""
    return {**defaults(cls, args.command), **from_args(cls, args, args.command)}


def _interfaces(args: argparse.Namespace) -> list[str] | None:
    chosen = AppConfig(**_options(AppConfig, args)).interfaces
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


def host_options(args: argparse.Namespace) -> HostOptions:
    """The HostOptions of ``host`` or ``demo``'s flags (as the Host dialog would hold them:
    a ``--codec``, ``--topk`` or ``--local-steps`` given is an advanced choice)."""
    values = _options(HostOptions, args)
    chosen = {name: values.pop(name) for name in MODE_OPTIONS}
    return HostOptions(**values).overriding(
        **{name: value for name, value in chosen.items() if value is not None})


def _resumed(flags: HostOptions) -> HostOptions:
    """``host --resume``: the session in ``--out`` hosted as it was (its recipe, name, port:
    HostOptions.resuming), but for a --name, --port... given other than its default."""
    start = defaults(HostOptions, "host")
    return dataclasses.replace(
        HostOptions.resuming(flags.out_dir), pin=flags.pin,
        **{name: getattr(flags, name) for name in HOSTED if getattr(flags, name) != start[name]})


def _host_plan(args: argparse.Namespace) -> HostPlan:
    """The plan of ``host`` or ``demo`` (the demo's fixed values are its defaults in the
    schema: loopback, any free port, not advertised)."""
    options = host_options(args)
    if options.resume:
        options = _resumed(options)
    app = AppConfig(**_options(AppConfig, args))
    return host_plan(dataclasses.replace(options, train_here=False),
                     dataclasses.replace(app, interfaces=tuple(_interfaces(args) or ()) or None),
                     end_when_refused=True)  # its workers are other processes


def host(args: argparse.Namespace) -> int:
    """Run a hub until done."""
    plan = _host_plan(args)
    view = HubView(quiet=args.quiet)
    service = HostService(plan, on_event=view.on)
    view.service = service
    try:
        _run_until_done(service.start())
    finally:
        view.close()
    return ExitCode.OK if service.result is not None else ExitCode.INTERRUPTED


def sessions(args: argparse.Namespace) -> int:
    """List the sessions on the LAN, once or live."""
    interfaces = _interfaces(args)
    scan = JoinOptions(**_options(JoinOptions, args)).scan
    if not args.watch:
        found = discover(scan, interfaces=interfaces)
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


REMOVED_WHY = {"removed": " (the host of this hub removed this machine from a session)",
               "blocked": " (the host of this hub blocked this machine: it cannot join until "
                          "the host allows it again)"}


def _worker_pin(given: str, required: bool = True, why: str = "") -> str:
    """The PIN from ``--pin``, the environment or a prompt (kept out of ``ps``); not asked
    for when the hub's key is remembered (``required`` false): it may not be needed.
    ``why``: the reason it is needed, said with the refusal."""
    pin = typed_pin(given or os.environ.get(PIN_ENV, ""))
    if not pin and not required:
        return ""
    if not pin and is_terminal(sys.stdin):
        try:
            pin = typed_pin(getpass.getpass("session PIN (shown on the hub): "))
        except EOFError:
            pin = ""
    if not pin:
        raise ConfigError(f"a PIN is needed{why}: type it at the prompt, or set {PIN_ENV}")
    return pin


def _join_target(options: JoinOptions, args: argparse.Namespace) -> JoinTarget:
    """The hub of ``options.address``, else the session found on the LAN."""
    if options.address:
        return JoinTarget.from_address(options.address)
    found = pick_session(discover(options.scan, interfaces=_interfaces(args)),
                         options.session or None)
    print(f"joining {describe(found)}", flush=True)
    return JoinTarget.from_session(found)


def join_options(args: argparse.Namespace) -> JoinOptions:
    """The JoinOptions of ``join``'s flags (ConfigError on a bad value)."""
    options = JoinOptions(**_options(JoinOptions, args))
    check(options)
    return options


def cli_join_plan(options: JoinOptions, target: JoinTarget, pin: str,
                  device: DeviceChoice) -> JoinPlan:
    """How this command line's worker joins ``target``: its flags whole, the PIN it was
    given or asked for, and the machine named by --name (it shows the hub's events itself:
    it does not follow them)."""
    return join_plan(target, dataclasses.replace(options, pin=pin), name=options.name or None,
                     device=device, follow_hub=False)


def join(args: argparse.Namespace) -> int:
    """Run a worker until the hub says the session is done."""
    options = join_options(args)
    name = options.name or worker_name()
    target = _join_target(options, args)
    pin = _worker_pin(options.pin, required=not remembers(target, name),
                      why=REMOVED_WHY.get(removed_by(target, name) or "", ""))
    device = pick_device(options.device)
    if device.note:
        print(f"note: {device.note}", file=sys.stderr)
    view = WorkerView(quiet=args.quiet)
    service = JoinService(cli_join_plan(options, target, pin, device), on_event=view.on)
    if hasattr(signal, "SIGUSR1") and threading.current_thread() is threading.main_thread():
        # `kill -USR1 PID` pauses the worker (the hub gives its shard to others), or resumes it
        signal.signal(signal.SIGUSR1, lambda *_: service.toggle_pause())
    try:  # --come-back (10 min by default): a stopped session resumed is joined again, no PIN
        service = run_coming_back(service, lambda s: _run_until_done(s.start()),
                                  options.come_back_s, view.on,
                                  lambda line: print(line, file=sys.stderr, flush=True))
    except RemovedError as exc:  # kicked: an end, not a fault (exit 8, nothing to retry)
        print(f"computeshare join: {exc}", file=sys.stderr)
        return exc.exit_code
    except RejectedError as exc:  # the remembered key refused: the next join asks the PIN
        if not pin and getattr(exc.code, "value", exc.code) == "NOT_PAIRED":
            forget_hub(target, name)
        raise
    finally:
        view.close()
    result = service.result
    if result is None:
        return ExitCode.INTERRUPTED
    print(f"session finished: {result.pushed} gradients pushed, {result.rejected} refused, "
          f"on {device.description}")
    return ExitCode.OK


def demo(args: argparse.Namespace) -> int:
    """A hub plus ``--workers`` local worker processes on loopback."""
    plan = _host_plan(args)
    view = HubView(quiet=args.quiet, show_pin=False)
    procs: list[subprocess.Popen[bytes]] = []
    threads = max(1, (os.cpu_count() or 1) // max(1, args.workers))

    def on_event(tagged: Tagged) -> None:
        view.on(tagged)
        if isinstance(tagged.event, Listening):  # the workers join as soon as it listens
            env = {**os.environ, PIN_ENV: service.pin}
            cmd = [*this_command(), "join",
                   f"127.0.0.1:{tagged.event.port}", "--quiet", "--device", "cpu",
                   "--threads", str(threads), "--come-back", "0"]  # they end with the demo
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
    return ExitCode.OK if service.result is not None else ExitCode.INTERRUPTED


def _reap(procs: list[subprocess.Popen[bytes]], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _model_file(args: argparse.Namespace) -> tuple[ModelFileOptions, Path, str, str]:
    """``evaluate``'s or ``predict``'s options, the model file, and the data and model spec:
    each flag given, else the session.json beside the file's, else the session default."""
    options = ModelFileOptions(**_options(ModelFileOptions, args))
    check(options)
    path = Path(options.model_file)
    saved = _saved_config(path)
    if args.dataset and _names_path(args.dataset) and not Path(args.dataset).expanduser().exists():
        raise ConfigError(f"no such folder or file: {args.dataset}")
    dataset = args.dataset or saved.get("dataset", default(SessionOptions, "dataset"))
    model_name = args.model or saved.get("model", default(SessionOptions, "model"))
    return options, path, dataset, model_name


def _names_path(spec: str) -> bool:
    """Whether a dataset spec is a path (a built-in name or python:NAME never is)."""
    return "/" in spec or os.sep in spec or spec.startswith(("~", ".")) \
        or is_table_spec(spec)


def _data_of(args: argparse.Namespace, path: Path, dataset: str) -> dict[str, Any]:
    """How to prepare ``dataset`` as load_data takes it: the session's way (session.json);
    a --dataset given replaces the session's data and its --test too.

    Raises:
        ConfigError: the session's own data (or its --test) is no longer there.
    """
    preparation = _preparation(_saved_config(path))
    if args.dataset:
        return {**preparation, "test_spec": ""}
    for what, spec in (("data", dataset), ("test data", preparation["test_spec"])):
        if spec and _names_path(spec) and not Path(spec).expanduser().exists():
            kind = "file" if Path(spec).suffix else "folder"
            raise ConfigError(f"the session's {what} {kind} {spec} is gone: name data "
                              "that is there with --dataset")
    return preparation


def _saved_config(path: Path) -> dict[str, Any]:
    """The configuration in the session.json beside a model file ({} when none reads)."""
    try:
        return dict(load_stored(path.parent / SESSION_FILE, SessionFile).config)
    except (OSError, Damaged):  # none, unreadable, or damaged (warned of, a copy kept)
        return {}


PREPARATION = {"image_size": "image_size", "test_fraction": "test_fraction",
               "label": "label_column", "input": "input",
               "test_spec": "test_data"}  # load_data's keyword: option


def _preparation(saved: dict[str, Any]) -> dict[str, Any]:
    """How the session prepared its data, as load_data takes it: session.json's options
    (their defaults where it has none)."""
    return {key: saved.get(name, default(SessionOptions, name))
            for key, name in PREPARATION.items()}


def evaluate(args: argparse.Namespace) -> int:
    """Print the test accuracy of a saved model (.pth or .pt2)."""
    options, path, dataset, model_name = _model_file(args)
    preparation = _data_of(args, path, dataset)
    score = evaluate_file(path, model_name, dataset, **preparation,
                          classes=read_classes(path.parent / CLASSES_FILE) or ())
    source = preparation["test_spec"] or dataset  # where the test samples came from
    if options.json:
        print(json.dumps({"accuracy": score.accuracy, "loss": score.loss, "dataset": dataset,
                          "test": source, "model": model_name, "samples": score.samples}))
    else:
        rows = is_table_spec(source) or (is_table_spec(dataset) and source == dataset)
        print(f"test accuracy: {100 * score.accuracy:.2f}% (loss {score.loss:.4f}) on "
              f"{score.samples} {source} test {'rows' if rows else 'images'}")
    return 0


def _predictor(args: argparse.Namespace) -> tuple[ModelFileOptions, Predictor]:
    """``predict``'s options and model: a .pt2 alone (its input shape, normalization and
    classes.json say all; the session's data is read only for a table's column names
    while it is there, or when --dataset is given), a .pth with its session's data."""
    options, path, dataset, model_name = _model_file(args)
    program = program_alone(path)
    if program is None or args.dataset:
        return options, load_predictor(path, model_name,
                                       data_info(dataset, **_data_of(args, path, dataset)))
    features: tuple[str, ...] = ()
    if (len(program.sample_shape) == 1 and not (path.parent / FEATURES_FILE).is_file()
            and is_table_spec(dataset) and Path(dataset).is_file()):  # an older session's
        preparation = {**_preparation(_saved_config(path)), "test_spec": ""}
        features = data_info(dataset, **preparation).features
    return options, load_predictor(path, model_name, None, features)


def predict(args: argparse.Namespace) -> int:
    """Print a saved model's top classes for each image file or CSV row; a file that
    cannot be read is reported and the others are still predicted (exit 2 then)."""
    options, predictor = _predictor(args)
    results = predictor.predict([Path(f) for f in options.files], options.top)
    for result in results:
        if options.json:
            print(json.dumps(result.to_json()), flush=True)
        elif isinstance(result, Unread):
            print(f"computeshare predict: error: {result.text()}", file=sys.stderr, flush=True)
        else:
            print(result.text(), flush=True)
    unread = [r for r in results if isinstance(r, Unread)]
    if unread and options.json:  # stdout held them; one line on stderr says so
        print(f"computeshare predict: error: {len(unread)} of {len(options.files)} files "
              "could not be read", file=sys.stderr)
    return ExitCode.USAGE if unread else ExitCode.OK


def self_test(args: argparse.Namespace) -> int:
    """Check this install end to end (the same checks as ``computeshare-desktop --self-test``)."""
    return run_self_test()
