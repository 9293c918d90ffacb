"""Host a training session from Python: a notebook or a script.

    from computeshare_desktop import host

    run = host(model, train=train_set, test=test_set, rounds=300)
    result = run.wait()  # result.model: your module, trained; result.metrics

``host`` takes an ``nn.Module`` (or a ``--model`` spec) and a map-style dataset (or a
``--dataset`` name), starts the hub on a thread of its own, prints the PIN and how
workers join, and returns a ``Run``. Workers join as for any session: the app, or
``computeshare join``. This is a front end like the command line: it fills in the
session's options (the same schema, the same checks) and drives the same session
service (``service.HostService``); the hub itself is handed the module and the data
(``hub.Given``) instead of building them from names.

A module is deep-copied (yours is never touched) and travels to workers as a checked
graph, like any model that is not a built-in. A dataset is read once into memory (see
``data.mapped``); without ``test`` a tenth of it is held out for testing (a built-in
dataset's own test split is used for a name).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import sysconfig
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from .data import ArrayDataset
from .data.mapped import MapDataset, hold_out, python_name, read_dataset
from .errors import ComputeShareError
from .events import (AllRefused, Ended, Evaluated, Event, Failed, Finished, Listening,
                     RoundClosed, Stopped)
from .hub import Given
from .hub.config import MODE_OPTIONS, SessionOptions
from .hub.user_model import prepare_model
from .models import parse_model_spec
from .models.specs import GIVEN_PREFIX
from .schema import default, defaults, options as schema_options
from .service import AppConfig, HostPlan, HostService, Tagged
from .service.options import HostOptions, default_output_folder, host_plan

__all__ = ["Metrics", "Result", "Run", "host"]

HOLD_OUT = 0.1  # the share of ``train`` held out for testing when no ``test`` is given
START_TIMEOUT_S = 600.0  # building the session (an export, a download) before it listens
STOP_TIMEOUT_S = 60.0
POLL_S = 0.2
MAX_EVENTS = 100_000  # events kept for ``events()`` until read; the oldest go first
NAMED = ("dataset", "model", "test_data")  # options given as host()'s own arguments
HOSTING = ("tensorboard",)  # HostOptions' own that host() takes among its **options


@dataclass(frozen=True, slots=True)
class Metrics:
    """How the session went."""

    accuracy: float | None  # the last test accuracy (None: stopped before any evaluation)
    loss: float | None  # the test loss with it
    rounds: int  # the model version reached (global steps)
    seconds: float  # training time (the final evaluation, when finished)
    history: tuple[Evaluated, ...]  # every test evaluation, in order
    train_loss: tuple[float, ...]  # each round's mean training loss, in order


@dataclass(frozen=True, slots=True)
class Result:
    """What ``Run.wait()`` returns."""

    model: nn.Module  # your module (a copy of it), with the trained weights
    metrics: Metrics
    out_dir: Path  # trained_model.pth, trained_model.pt2, classes.json, metrics, checkpoint
    stopped: bool  # stopped before its last round (the weights are those it had reached)


class _Feed:
    """The session's events for ``events()``: thread-safe, bounded, ended by ``Ended``."""

    def __init__(self) -> None:
        self._items: deque[Event] = deque(maxlen=MAX_EVENTS)
        self._ready = threading.Condition()
        self._over = False

    def put(self, event: Event) -> None:
        with self._ready:
            self._items.append(event)
            self._ready.notify_all()

    def __iter__(self) -> Iterator[Event]:
        while True:
            with self._ready:
                self._ready.wait_for(lambda: self._items or self._over)
                if not self._items:
                    return
                event = self._items.popleft()
                if isinstance(event, Ended):
                    self._over = True
            yield event


class Run:
    """A session started by ``host``: its PIN and address, its events, its end."""

    def __init__(self, plan: HostPlan, *, quiet: bool) -> None:
        self._service = HostService(plan, on_event=self._on)
        self._quiet = quiet
        self._feed = _Feed()
        self._listening = threading.Event()
        self._history: list[Evaluated] = []
        self._losses: list[float] = []
        self._last: Finished | Stopped | None = None
        self.address = ""  # HOST:PORT workers join, once listening
        self.out_dir: Path = self._service.out_path  # the model, metrics and checkpoint

    @property
    def pin(self) -> str:
        """The session PIN workers type."""
        return self._service.pin

    def events(self) -> Iterator[Event]:
        """The hub's typed events (``events.Event``: WorkerJoined, RoundClosed, Evaluated,
        Finished...) as they come, from the first; it ends with the session (``Ended``).
        Each event is given once, to whichever loop reads it first."""
        return iter(self._feed)

    def wait(self, timeout: float | None = None) -> Result:
        """Block until the session ends; its trained model and metrics. Ctrl-C here stops
        the session (saved) and raises KeyboardInterrupt.

        Raises:
            TimeoutError: still running after ``timeout`` seconds.
            AllRefusedError: every worker that came refused the model and nobody else came
                within a minute (the model and a checkpoint are saved, as on a stop).
            ComputeShareError: the session failed.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not self._service.wait(POLL_S):  # short waits: Ctrl-C gets through
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"the session is still running after {timeout} s")
        except KeyboardInterrupt:
            self.stop()
            raise
        return self._result()

    def stop(self) -> Result:
        """Stop now: the hub saves the model and a checkpoint, as every stop does, and
        tells its workers; returns once it has (the result, as ``wait``)."""
        self._service.stop()
        if not self._service.join(STOP_TIMEOUT_S):
            raise TimeoutError(f"the session did not stop within {STOP_TIMEOUT_S:.0f} s")
        return self._result()

    @property
    def running(self) -> bool:
        """True until the session has ended."""
        return self._service.running

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._service.running:
            self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "ended"
        return f"<computeshare Run {state} at {self.address or '?'} PIN {self.pin}>"

    # ----------------------------------------------------------------- internals
    def _result(self) -> Result:
        service, session = self._service, self._service.session
        if service.error is not None:
            raise service.error
        if session is None:
            raise ComputeShareError("the session ended before it started")
        last = self._last
        metrics = Metrics(
            accuracy=self._history[-1].accuracy if self._history else None,
            loss=self._history[-1].loss if self._history else None,
            rounds=session.version,
            seconds=last.seconds if isinstance(last, Finished) else 0.0,
            history=tuple(self._history), train_loss=tuple(self._losses))
        return Result(session.server.model, metrics, service.out_path,
                      stopped=not isinstance(last, Finished))

    def _on(self, tagged: Tagged) -> None:
        """Every event of the service, on its threads."""
        if tagged.source != "hub":
            return  # this machine's own worker: its events are not the session's
        event = tagged.event
        if isinstance(event, Evaluated):
            self._history.append(event)
        elif isinstance(event, RoundClosed):
            self._losses.append(event.loss)
        elif isinstance(event, Finished | Stopped):
            self._last = event
        elif isinstance(event, AllRefused):
            self._say(f"No worker can train this model: {event.who()} refused it, and none "
                      f"is left. The last, {event.name}: {event.reason}\n  If nobody else "
                      f"joins within {event.grace_s:.0f} s, the session stops (saved) and "
                      f"run.wait() raises AllRefusedError.")
        elif isinstance(event, Listening):
            self.address = f"{(event.addresses or ('127.0.0.1',))[0]}:{event.port}"
            self._say(f"ComputeShare session listening on {event.bind}:{event.port}\n"
                      f"  session PIN: {self.pin}\n"
                      f"  on each worker: computeshare join {self.address} (or Join in the "
                      f"app), then type the PIN\n  output: {event.out_dir}")
        self._feed.put(event)
        if isinstance(event, Listening | Failed | Ended):
            self._listening.set()

    def _say(self, text: str) -> None:
        if not self._quiet:
            print(text, flush=True)


def host(model: nn.Module | str, train: MapDataset | str, test: MapDataset | str | None = None,
         *,
         rounds: int | None = None, preset: str | None = None, workers: int | None = None,
         batch_size: int | None = None, lr: float | None = None, pin: str = "",
         port: int | None = None, bind: str | None = None, out_dir: str | Path | None = None,
         advertise: bool = True, this_machine_trains: bool = False,
         classes: Sequence[str] = (), name: str = "", quiet: bool = False,
         **options: Any) -> Run:
    """Start hosting a session; returns once the hub listens (PIN and address printed).

    Args:
        model: an ``nn.Module`` (copied; it travels as a checked graph), or a model spec
            as ``--model`` takes it (``simplenet``, ``torchvision:resnet18``, ``net.py:Net``).
        train: a map-style dataset of ``(image, label)`` items (C×H×W float in [0, 1] or
            uint8; int labels), or a spec as ``--dataset`` takes it: a built-in dataset's
            name (``mnist-sample``...), a folder of images, a table file or a folder
            written by Hugging Face's ``save_to_disk``.
        test: the same for testing; default: a tenth of ``train`` held out (a spec: the
            test split it gives or holds out). A spec as ``--test`` takes it (a folder of
            images, a saved dataset) goes with a spec for ``train``.
        rounds, preset, workers, batch_size, lr: as ``computeshare host`` takes them
            (default: its defaults).
        pin: the PIN workers type (default: COMPUTESHARE_PIN, else a random one).
        port: the request port (default: 5555, or any free port when it is busy; 0: any).
        bind: the address to listen on (default: every interface).
        out_dir: the output folder (default: a new one under ./computeshare-runs).
        advertise: announce the session on the LAN (mDNS).
        this_machine_trains: run a worker on this machine too (one of ``workers``).
        classes: the class names, in label order (default: the labels as text).
        name: the data's name (default: the dataset's class name) and the session's.
        quiet: print nothing.
        **options: any other session option of ``computeshare host`` by its Python name
            (``optimizer="adamw"``, ``weight_decay=0.01``, ``precision="auto"``...), and
            ``tensorboard=True`` (event files in the output folder's tensorboard/).

    Raises:
        TypeError: an option that does not exist, or a model or data of the wrong kind.
        ConfigError: a value the session refuses, data that cannot be read, a model that
            does not export.
    """
    named = dict(rounds=rounds, preset=preset, workers=workers, batch_size=batch_size, lr=lr)
    chosen: dict[str, Any] = {k: v for k, v in named.items() if v is not None}
    chosen.update(_session_options(options))
    dataset = _dataset_name(train, test, name)
    module, spec = _model(model)
    # As ``computeshare host`` reads its flags: a codec, top-k fraction or local steps given
    # overrides the preset's, which decides the others.
    values = {**defaults(HostOptions, "host"), **chosen, "dataset": dataset, "model": spec,
              "test_data": test if isinstance(test, str) else ""}
    mode = {n: values.pop(n) for n in MODE_OPTIONS}
    hosting = dataclasses.replace(
        HostOptions(**values).overriding(**{n: v for n, v in mode.items() if v is not None}),
        out_dir=str(_out_dir(out_dir)), pin=pin or "",
        port=default(HostOptions, "port", "host") if port is None else port, advertise=advertise,
        name=name or "", train_here=this_machine_trains)
    config = hosting.config()
    if module is not None:
        prepare_model(module, config, parse_model_spec(spec))
    data = None if isinstance(train, str) else _read(train, test, dataset, classes, config.seed)
    plan = host_plan(hosting, AppConfig(bind=bind or default(AppConfig, "bind", "host")),
                     config=config, end_when_refused=True,
                     given=Given(module, data) if module is not None or data else None)
    return _start(plan, quiet)


def _start(plan: HostPlan, quiet: bool) -> Run:
    run = Run(plan, quiet=quiet)
    service = run._service.start()
    if not run._listening.wait(START_TIMEOUT_S):
        service.stop()
        service.join(STOP_TIMEOUT_S)
        raise ComputeShareError(f"the hub did not start listening within "
                                f"{START_TIMEOUT_S:.0f} s")
    if service.error is not None:
        service.join(STOP_TIMEOUT_S)
        raise service.error
    return run


def _session_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` checked against the schema's session options (TypeError naming one
    that does not exist)."""
    known = [n for n in schema_options(SessionOptions) if n not in NAMED] + list(HOSTING)
    for key in options:
        if key not in known:
            raise TypeError(f"host() got an unexpected keyword argument {key!r}; the session "
                            f"options are: {', '.join(known)}")
    return dict(options)


def _model(model: nn.Module | str) -> tuple[nn.Module | None, str]:
    """The module the session trains (a copy) and the spec session.json names it by."""
    if isinstance(model, str):
        return None, model
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module or a model spec (str), not "
                        f"{type(model).__name__}")
    return copy.deepcopy(model).cpu(), module_spec(model)


def module_spec(model: nn.Module) -> str:
    """What session.json and workers call a module: ``FILE.py:Class`` when the user's own
    file defines its class, else ``python:Class`` (torch's ``nn.Sequential``, a class of
    an installed package or typed at a prompt: a file no one can build it from alone)."""
    cls = type(model)
    try:
        source = inspect.getsourcefile(cls)
    except TypeError:  # a class without a file (built in C, or typed at a prompt)
        source = None
    if not source or not source.endswith(".py") or _installed(Path(source)) \
            or not Path(source).is_file():
        return f"{GIVEN_PREFIX}{cls.__name__}"
    return f"{source}:{cls.__name__}"


def _installed(source: Path) -> bool:
    """Whether a source file belongs to Python or to an installed package (torch's
    containers, torchvision's models), not to the user."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")
             if key in paths}
    resolved = source.resolve()
    return any(resolved.is_relative_to(Path(root).resolve()) for root in roots)


def _dataset_name(train: MapDataset | str, test: MapDataset | str | None, name: str) -> str:
    """The session's dataset: a spec (a built-in's name, a path), or ``python:NAME`` for
    data given here.

    Raises:
        TypeError: data of another kind, or a spec mixed with a dataset.
    """
    if isinstance(train, str) or isinstance(test, str):
        if not (isinstance(train, str) and (test is None or isinstance(test, str))):
            raise TypeError("train= and test= are both specs (a dataset's name, a folder, a "
                            "file) or both map-style datasets")
        return train
    for value, what in ((train, "train"), (test, "test")):
        if value is not None and (isinstance(value, str) or not hasattr(value, "__getitem__")):
            raise TypeError(f"{what} must be a map-style dataset (len and [i]) or, for "
                            f"train, a built-in dataset's name; not {type(value).__name__}")
    return python_name(name or type(train).__name__)


def _read(train: MapDataset, test: MapDataset | None, dataset: str, classes: Sequence[str],
          seed: int) -> tuple[ArrayDataset, ArrayDataset]:
    """The session's training and test data (the test part held out when not given)."""
    train_set = read_dataset(train, name=dataset, classes=classes)
    if test is None:
        return hold_out(train_set, HOLD_OUT, seed)
    return train_set, read_dataset(test, name=dataset, info=train_set.info, what="test")


def _out_dir(out_dir: str | Path | None) -> Path:
    if out_dir is not None:
        return Path(out_dir).expanduser()
    path = Path(default_output_folder(str(Path.cwd() / "computeshare-runs")))
    for n in range(2, 1000):  # two runs started in one second
        if not path.exists():
            break
        path = path.with_name(f"{path.name.split('.')[0]}.{n}")
    return path
