"""What a session is started with (the Host and Join dialogs and the command line fill
these in): plain, frozen dataclasses whose options are declared in the schema (see
``schema`` and ``hub.config``). No Qt."""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import time
import typing
from dataclasses import dataclass, field
from typing import Any
from pathlib import Path

import msgspec
import platformdirs

from ..addresses import parse_address
from ..app_options import AppConfig
from ..data.folders import dataset_label
from ..defaults import DEFAULT_PORT
from ..discovery import DiscoveredSession
from ..errors import ConfigError, FolderInUseError
from ..hub import Given, HubConfig
from ..hub.config import MODE_OPTIONS, SESSION, SessionOptions, session_config
from ..hub.folder_lock import holder
from ..hub.outputs import OutputDir
from ..hub.presets import AUTO, PRESET_CHOICES, resolve
from ..hub.tensorboard_log import tensorboard_valid
from ..protocol.auth import PIN_DIGITS
from ..protocol.ports import HubPorts
from ..schema import (ADVANCED, GROUPS, LINK, NETWORK, WORKERS, check, default, front_field,
                      option)
from ..worker import DeviceChoice


log = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class HostOptions(SessionOptions):
    """Everything the Host dialog asks; ``config()`` turns it into the core's HubConfig.
    The training options are SessionOptions'; these are where and how to host."""

    preset: str = front_field(SessionOptions, "preset", "app")  # the network: auto, lan...
    train_here: bool = option(
        True, "a worker on this machine too", fronts={"host": False, "demo": False},
        saved=True, label="Also train on this machine", group=WORKERS,
        tip="Runs a worker here too: it pairs with the PIN like any other and counts as one "
            "of the expected workers.")  # the command line trains in other processes
    out_dir: str = option(
        "", "output folder (default ./{default})", flag="--out", commands=SESSION,
        fronts={"host": "computeshare-run", "demo": "computeshare-demo"},
        label="Output folder", group=WORKERS)  # the app fills in a fresh run folder
    tensorboard: bool = option(
        False, "also write TensorBoard event files in OUT/tensorboard: loss, accuracy, "
        "samples/s, bytes per round, each worker's share and the learning rate (needs the "
        "tensorboard extra)", flag="--tensorboard", commands=SESSION, valid=tensorboard_valid,
        saved=True, label="Also write TensorBoard logs", group=WORKERS,
        tip="Curves for TensorBoard in the output folder's tensorboard/ folder (tensorboard "
            "--logdir FOLDER): loss, accuracy, samples/s, bytes per round, each worker's "
            "share of the work and the learning rate.")
    advanced: bool = option(
        False, "the codec, top-k fraction and local steps below override the preset",
        saved=True, label=GROUPS[ADVANCED], group=LINK, section=ADVANCED)
    name: str = option(
        "", "session name shown on the LAN (default: HOST — DATASET)", flag="--name",
        commands=("host",), saved=True, label="Session name", group=NETWORK)
    port: int = option(
        DEFAULT_PORT, f"request port; the hub uses {HubPorts.LAYOUT} (default {{default}})",
        flag="--port", commands=("host",), fronts={"demo": 0}, ge=0, le=HubPorts.MAX_REQUEST,
        error=f"the port must be 0 (any free port) to {HubPorts.MAX_REQUEST}", saved=True,
        label="Port", group=NETWORK, special="any free port", plain=True)
    # 0: any free port; a busy default falls back to any free port
    advertise: bool = option(
        True, "do not announce the session on the LAN (workers then need the address)",
        flag="--no-advertise", commands=("host",), fronts={"demo": False})
    resume: bool = option(
        False, "continue the session saved in --out from its last checkpoint",
        flag="--resume", commands=("host",))  # in out_dir, with its own configuration
    pin: str = option(
        "", f"session PIN workers must type (default: COMPUTESHARE_PIN, else a random "
        f"{PIN_DIGITS}-digit PIN, printed); on a shared machine prefer COMPUTESHARE_PIN: "
        "other users can see command lines", flag="--pin", commands=("host",))
    # "": COMPUTESHARE_PIN, else a random PIN

    @classmethod
    def resuming(cls, folder: str | Path) -> "HostOptions":
        """The options that resume the session in ``folder`` (ConfigError when it cannot)."""
        summary = OutputDir(Path(folder)).summary()
        if summary is not None and summary["running"] is not None:
            raise FolderInUseError(folder, summary["running"])
        if summary is None or not summary["resumable"]:
            raise ConfigError(f"{folder} holds no session that can be resumed")
        return cls(**_recipe(HubConfig.from_json(summary["config"])),
                   **hosted_options(summary["host"]), out_dir=str(folder), resume=True)

    def overriding(self, **chosen: Any) -> "HostOptions":
        """These options with some of the preset's codec, top-k fraction and local steps
        chosen (the command line's ``--codec``...): the advanced fields, the rest filled in
        from the preset, as the Host dialog shows them."""
        if not chosen:
            return self
        _, mode = resolve(self.preset, **chosen)
        return dataclasses.replace(self, advanced=True, codec=mode.codec, topk=mode.topk,
                                   local_steps=mode.local_steps)

    def config(self) -> HubConfig:
        """The hub configuration (raises ConfigError on a bad value): the preset decides
        the codec, top-k fraction and local steps, unless ``advanced``."""
        check(self)
        return session_config(self, MODE_OPTIONS if self.advanced else ())

    def session_name(self) -> str:
        """The name advertised on the LAN."""
        return self.name.strip() or f"{socket.gethostname()} — {dataset_label(self.dataset)}"

    def output_path(self) -> Path:
        """The output folder; ConfigError when it cannot hold this session (see
        ``check_output_folder``)."""
        if not self.out_dir.strip():
            raise ConfigError("choose an output folder")
        return check_output_folder(Path(self.out_dir).expanduser(), self.resume)


def _recipe(config: HubConfig) -> dict[str, Any]:
    """The SessionOptions of a session's configuration, as the Host dialog holds them: a
    codec, top-k fraction or local steps other than the preset's is an advanced choice."""
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(SessionOptions)}
    mode = (config.codec, config.topk, config.local_steps)
    preset = config.preset if config.preset in PRESET_CHOICES else AUTO  # "custom"
    _, start = resolve(preset)
    return {**values, "preset": preset,
            "advanced": mode != (start.codec, start.topk, start.local_steps)}


# The HostOptions a session keeps of how it was hosted (session.json's "host"), so that a
# resume hosts it the same way: HostService.hosted writes them, HostOptions.resuming reads.
HOSTED = ("name", "port", "train_here", "advertise", "tensorboard")


def hosted_options(saved: dict[str, Any]) -> dict[str, Any]:
    """The HostOptions a session's session.json kept of how it was hosted (HostService
    .hosted; none in one written before), each decoded as its option's type: one of the
    wrong type is left out (its default then holds), with a warning naming it."""
    types = typing.get_type_hints(HostOptions)
    kept: dict[str, Any] = {}
    for name in HOSTED:
        if name not in saved:
            continue
        try:
            kept[name] = msgspec.convert(saved[name], types[name])
        except msgspec.ValidationError as exc:
            log.warning("session.json's host.%s is not used: %s", name, exc)
    return kept


@dataclass(frozen=True, slots=True)
class HostPlan:
    """What to host, and where: the options whole, as a front end holds them (the Host
    dialog's, ``host``'s flags, ``api.host``'s arguments), the configuration they make, and
    what only the front end knows. ``host_plan`` builds it, for every front end."""

    options: HostOptions  # how to host: its pin, port, name, advert, local worker...
    config: HubConfig  # what to train (on a resume, the folder's own configuration wins)
    out_dir: Path
    bind: str = default(AppConfig, "bind", "host")
    interfaces: tuple[str, ...] | None = None  # advertise on these (None: all)
    device: DeviceChoice | None = None  # the local worker's (None: the best one)
    linger_s: float = 5.0  # after the last round, how long to wait for workers to hear it
    given: Given | None = None  # a model and data handed from Python (api.host), not built
    # every worker refused the model and nobody else came in time (RefusedWaitOver): end the
    # session with AllRefusedError (the command line); False: wait on (the app's window)
    end_when_refused: bool = False

    @property
    def resume(self) -> bool:
        return self.options.resume

    @property
    def port(self) -> int:
        """The request port asked for (0: any free one; the default: a busy one falls
        back to any free one, ``port_falls_back``)."""
        return self.options.port

    @property
    def port_falls_back(self) -> bool:
        """The one port rule: the default port, when busy, gives way to any free port (so
        a second hub on one machine still starts); a port chosen is that port or an error."""
        return self.options.port == DEFAULT_PORT


def host_plan(options: HostOptions, app: AppConfig | None = None, *,
              config: HubConfig | None = None, device: DeviceChoice | None = None,
              given: Given | None = None, end_when_refused: bool = False,
              linger_s: float = 5.0) -> HostPlan:
    """The plan of ``options`` (ConfigError on a bad value), for the app, the command line,
    ``api.host`` and the self-test alike. ``app``: where to listen and advertise (None: the
    defaults); ``config``: the configuration already made of ``options`` (``api.host``
    prepares its model with it; a test gives its own); ``device``: the local worker's."""
    app = app or AppConfig()
    if not options.out_dir.strip():
        raise ConfigError("choose an output folder")
    return HostPlan(options, options.config() if config is None else config,
                    Path(options.out_dir).expanduser(), bind=app.bind,
                    interfaces=tuple(app.interfaces) if app.interfaces else None,
                    device=device, linger_s=linger_s,
                    given=given, end_when_refused=end_when_refused)


def check_output_folder(path: Path, resume: bool) -> Path:
    """``path`` if it can hold the session: a folder this user can write, or create; a
    resume needs a checkpoint there, a new session a folder that holds no other (their
    metrics would mix), and neither while a running session holds it (FolderInUseError,
    naming its process and port). ConfigError otherwise, before anything is written."""
    check_writable_folder(path)
    running = holder(path)
    if running is not None:
        raise FolderInUseError(path, running)
    if resume:
        if not OutputDir(path).has_checkpoint():
            raise ConfigError(f"{path} holds no checkpoint to resume")
    elif OutputDir(path).holds_session():
        raise ConfigError(f"{path} already holds a training session: resume it (--resume, or "
                          "Resume in the app) or choose a new folder")
    return path


def check_writable_folder(path: Path) -> None:
    """ConfigError naming why ``path`` cannot be a folder to write in: it, or a folder above
    it, is a file; or the nearest one that exists is not writable here."""
    nearest = path.absolute()
    while not nearest.exists() and nearest.parent != nearest:
        nearest = nearest.parent
    where = "" if nearest == path.absolute() else f"{path}: "
    if not nearest.is_dir():
        raise ConfigError(f"{where}{nearest} is a file, not a folder: choose another output "
                          "folder")
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise ConfigError(f"{where}{nearest} cannot be written by this user: choose another "
                          "output folder")


@dataclass(frozen=True, slots=True)
class JoinTarget:
    """A hub to join: from a discovered session or from an address the user typed."""

    host: str
    port: int
    label: str  # what the user sees: the session name or the address
    pair_port: int | None = None
    expected_key: str | None = None  # advertised key fingerprint: the pairing checks it
    accepting: bool = True
    note: str = field(default="", compare=False)
    hosts: tuple[str, ...] = ()  # every address the hub advertised, most likely first

    @classmethod
    def from_session(cls, session: DiscoveredSession) -> "JoinTarget":
        """The target of a session seen on the LAN."""
        advert = session.advert
        note = ("training has finished" if advert.done else
                "the session is full: you will wait for a free shard" if advert.full else "")
        return cls(host=session.addresses[0], port=advert.port, label=advert.name,
                   pair_port=advert.pair_port, expected_key=advert.key_fingerprint,
                   accepting=advert.accepting, note=note, hosts=tuple(session.addresses))

    @classmethod
    def from_address(cls, text: str) -> "JoinTarget":
        """Parse HOST, HOST:PORT or tcp://HOST:PORT (same rules as ``computeshare join``).

        Raises:
            ConfigError: the text is not an address.
        """
        host, port = parse_address(text)
        return cls(host=host, port=port, label=f"{host}:{port}")


def default_output_folder(parent: str | None = None) -> str:
    """A fresh, timestamped run folder under ``parent`` (default: Documents/ComputeShare)."""
    base = Path(parent) if parent else Path(platformdirs.user_documents_dir()) / "ComputeShare"
    return str(base / time.strftime("run-%Y%m%d-%H%M%S"))


def worker_name() -> str:
    """This machine's name as workers show it on the hub."""
    return socket.gethostname() or "worker"
