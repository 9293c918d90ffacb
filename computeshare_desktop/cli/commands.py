"""The subcommands: thin glue between arguments, the cores and the terminal."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import torch

from ..data import dataset_info, load_dataset
from ..discovery import SessionBrowser, describe, discover, pick_session
from ..discovery.hub_advert import HubAdvertising, resolve_interface
from ..errors import ConfigError
from ..evaluation import evaluate as evaluate_model
from ..hub import HubConfig, HubResult, HubSession
from ..hub.presets import resolve
from ..models import build_model
from ..protocol.auth import new_pin
from ..protocol.pake import key_fingerprint
from ..transport import (DEFAULT_PORT, HubServer, KnownHubs, ZmqConnector, first_reachable,
                         identity_path, load_or_create)
from ..worker import WorkerOptions, WorkerSession, pick_device
from .progress import RoundBar

PIN_ENV = "COMPUTESHARE_PIN"
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
    return [resolve_interface(i) for i in args.interface] if args.interface else None


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Ctrl-C, SIGTERM (and Windows' Ctrl-Break) set ``stop``: the serve loop finishes the
    request it is handling, so the state it saves is whole. A second Ctrl-C quits at once."""
    def handler(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

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


def _serve(session: HubSession, server: HubServer, bar: RoundBar,
           advertising: HubAdvertising | None = None) -> HubResult | None:
    """Serve until done or stopped; a stop saves the model and a checkpoint."""
    stop = threading.Event()
    try:
        with _stop_on_signals(stop):
            result = server.serve(stop)
            if result is None:
                path = session.save_stopped()
    finally:
        if advertising is not None:
            advertising.close()
        bar.close()
        server.close()
        session.close()
    if result is None:
        saved = f"model saved to {path}" if path else "the model could not be saved"
        print(f"\nstopped at version {session.server.version}; {saved}; continue with "
              f"computeshare host --resume --out {session.out.path}", file=sys.stderr)
        return None
    print(f"final test accuracy: {100 * result.accuracy:.2f}% after {result.version} rounds "
          f"in {result.seconds:.1f} s; model saved to {result.model_path}")
    return result


def host(args: argparse.Namespace) -> int:
    """Run a hub until done."""
    pin = args.pin or os.environ.get(PIN_ENV) or new_pin()
    if len(pin.strip()) < 4:
        raise ConfigError("the PIN must have at least 4 characters")
    out = Path(args.out or "computeshare-run")
    config = _config(args, args.workers)
    bar = RoundBar(config.rounds, quiet=args.quiet)
    identity = load_or_create(identity_path("hub"))
    session = HubSession(config, pin=pin, hub_key=identity.public, out_dir=out,
                         resume=args.resume, on_event=bar.hub_event)
    server = HubServer(session, identity, host=args.bind, port=args.port)
    if bar.bar is not None:
        bar.bar.total = session.config.rounds
        bar.bar.update(session.server.version)
    name = socket.gethostname()
    advertising = None
    if not args.no_advertise:
        session_name = args.name or f"{name} — {config.dataset}"
        advertising = HubAdvertising(session, hub_key=identity.public, port=server.port,
                                     name=session_name, interfaces=_interfaces(args))
        if not advertising.start():
            advertising = None
    where = (f"on each worker: computeshare join   (or: computeshare join "
             f"{name}:{server.port}), then type the PIN" if advertising else
             f"on each worker: computeshare join {name}:{server.port}, then type the PIN")
    print(f"hub listening on {args.bind}:{server.port} (events {server.pub_port}, pairing "
          f"{server.pair_port}); hub key {key_fingerprint(identity.public)}\n"
          f"session PIN: {pin}\n  {where}", flush=True)
    return 0 if _serve(session, server, bar, advertising) else INTERRUPTED


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


def _address(text: str) -> tuple[str, int]:
    """(host, port) from HOST, HOST:PORT or tcp://HOST:PORT."""
    rest = text.split("://", 1)[1] if "://" in text else text
    host_part, sep, port = rest.rpartition(":")
    if not sep:
        host_part, port = rest, str(DEFAULT_PORT)
    if not host_part or not port.isdigit() or not 0 < int(port) < 65534:
        raise ConfigError(f"bad hub address {text!r}: use HOST, HOST:PORT or tcp://HOST:PORT")
    return host_part, int(port)


def _worker_pin(args: argparse.Namespace, required: bool = True) -> str:
    """The PIN from ``--pin``, the environment or a prompt (kept out of ``ps``); not asked
    for when the hub's key is remembered (``required`` false): it may not be needed."""
    pin = args.pin or os.environ.get(PIN_ENV)
    if not pin and not required:
        return ""
    if not pin and sys.stdin.isatty():
        try:
            pin = getpass.getpass("session PIN (shown on the hub): ").strip()
        except EOFError:
            pin = ""
    if not pin:
        raise ConfigError(f"a PIN is needed: type it at the prompt, or set {PIN_ENV}")
    return pin


def join(args: argparse.Namespace) -> int:
    """Run a worker until the hub says the session is done."""
    name = args.name or socket.gethostname()
    key_file = identity_path("worker", name)
    known = KnownHubs(key_file)
    expected_key, pair_port = None, None
    if args.address:
        host_name, port = _address(args.address)
        hub_key = known.key_for(f"{host_name}:{port}")
    else:
        found = pick_session(discover(args.scan, interfaces=_interfaces(args)), args.session)
        print(f"joining {describe(found)}", flush=True)
        port = found.advert.port
        expected_key, pair_port = found.advert.key_fingerprint, found.advert.pair_port
        host_name = first_reachable(found.addresses, pair_port)  # the advert lists them all
        hub_key = known.key_with_fingerprint(expected_key, key_fingerprint)
    pin = _worker_pin(args, required=hub_key is None)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    if device.note:
        print(f"note: {device.note}", file=sys.stderr)
    if args.max_rate < 0:
        raise ConfigError("--max-rate must be positive (or 0: no limit)")
    options = WorkerOptions(pin=pin, name=name, give_up_s=args.give_up, max_rate=args.max_rate)
    bar = RoundBar(0, quiet=args.quiet, desc="worker")
    connector = ZmqConnector(host_name, port, load_or_create(key_file), pair_port=pair_port)

    def on_event(event: dict) -> None:
        bar.worker_event(event)
        if event["kind"] == "joined" and worker.hub_key:  # a restart rejoins without the PIN
            known.remember(worker.hub_key, f"{host_name}:{port}")

    worker = WorkerSession(connector, options, device, on_event=on_event,
                           expected_key=expected_key, hub_key=hub_key)
    try:
        result = worker.run()
    finally:
        bar.close()
    print(f"session finished: {result.pushed} gradients pushed, {result.rejected} refused, "
          f"on {device.description}")
    return 0


def demo(args: argparse.Namespace) -> int:
    """A hub plus ``--workers`` local worker processes on loopback."""
    pin = new_pin()
    out = Path(args.out or "computeshare-demo")
    config = _config(args, args.workers)
    bar = RoundBar(config.rounds, quiet=args.quiet)
    identity = load_or_create(identity_path("hub"))
    session = HubSession(config, pin=pin, hub_key=identity.public, out_dir=out,
                         on_event=bar.hub_event)
    server = HubServer(session, identity, host="127.0.0.1", port=0)  # not advertised
    threads = max(1, (os.cpu_count() or 1) // max(1, args.workers))
    env = {**os.environ, PIN_ENV: pin}
    cmd = [sys.executable, "-m", "computeshare_desktop.cli", "join",
           f"127.0.0.1:{server.port}", "--quiet", "--device", "cpu", "--threads", str(threads)]
    procs = [subprocess.Popen([*cmd, "--name", f"demo-{i + 1}"], env=env,
                              stdout=subprocess.DEVNULL) for i in range(args.workers)]
    try:
        result = _serve(session, server, bar)
    finally:
        _reap(procs)
    return 0 if result else INTERRUPTED


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
    saved = json.loads(meta.read_text()).get("config", {}) if meta.exists() else {}
    dataset = args.dataset or saved.get("dataset", "mnist-sample")
    model_name = args.model or saved.get("model", "simplenet")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
    model = build_model(model_name, dataset_info(dataset))
    try:
        model.load_state_dict(state)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path} is not a {model_name} for {dataset}: "
                          f"{str(exc).splitlines()[0]}") from None
    test = load_dataset(dataset, "test")
    accuracy, loss = evaluate_model(model, test)
    if args.json:
        print(json.dumps({"accuracy": accuracy, "loss": loss, "dataset": dataset,
                          "model": model_name, "samples": len(test)}))
    else:
        print(f"test accuracy: {100 * accuracy:.2f}% (loss {loss:.4f}) on {len(test)} "
              f"{dataset} test images")
    return 0
