"""What a session is started with (the Host and Join dialogs and the command line fill
these in): plain, frozen dataclasses. No Qt."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from ..discovery import DiscoveredSession
from ..errors import ConfigError
from ..hub import HubConfig
from ..hub.outputs import OutputDir
from ..hub.presets import resolve
from ..defaults import DEFAULT_PORT
from ..worker import DeviceChoice


@dataclass(frozen=True, slots=True)
class AppConfig:
    """How the app talks to the network; filled from the command line (tests use loopback)."""

    interfaces: tuple[str, ...] | None = None  # mDNS browse/advertise here (None: all)
    bind: str = "0.0.0.0"  # the hub listens here
    refresh_ms: int = 100  # how often windows drain their event queues


@dataclass(frozen=True, slots=True)
class HostPlan:
    """What to host, and where."""

    config: HubConfig  # on a resume, the folder's own configuration wins
    out_dir: Path
    resume: bool = False
    pin: str = ""  # "": COMPUTESHARE_PIN, else a random PIN
    port: int | None = None  # None: the default port, or any free one when it is busy
    bind: str = "0.0.0.0"
    interfaces: tuple[str, ...] | None = None  # advertise on these (None: all)
    advertise: bool = True
    name: str = ""  # session name on the LAN ("": HOST — DATASET)
    train_here: bool = False  # a worker on this machine too
    device: DeviceChoice | None = None  # the local worker's (None: the best one)
    linger_s: float = 5.0  # after the last round, how long to wait for workers to hear it


@dataclass(frozen=True, slots=True)
class HostOptions:
    """Everything the Host dialog asks; ``config()`` turns it into the core's HubConfig."""

    dataset: str = "mnist-sample"
    model: str = "simplenet"
    rounds: int = 600
    batch_size: int = 32
    workers: int = 2  # this machine (train_here) plus one more
    lr: float = 0.01
    out_dir: str = ""
    train_here: bool = True
    eval_every: int = 100
    name: str = ""  # session name on the LAN ("" : HOST — DATASET)
    port: int = DEFAULT_PORT  # 0: any free port; a busy default falls back to any free port
    advertise: bool = True
    preset: str = "auto"  # the network: auto, lan, wifi, slow (see hub.presets)
    advanced: bool = False  # the codec, top-k fraction and local steps below override it
    codec: str = "zstd"
    topk: float = 0.01
    local_steps: int = 0
    resume: bool = False  # continue the stopped session in out_dir (its own configuration)
    updates: str = "sync"  # sync rounds, or async: each update applied as it arrives
    max_staleness: int = 8  # async: the oldest update (in versions) that still counts
    aggregation: str = "mean"  # mean, or robust: trimmed-mean, median

    @classmethod
    def resuming(cls, folder: str | Path) -> "HostOptions":
        """The options that resume the session in ``folder`` (ConfigError when it cannot)."""
        summary = OutputDir(Path(folder)).summary()
        if summary is None or not summary["resumable"]:
            raise ConfigError(f"{folder} holds no session that can be resumed")
        c = summary["config"]
        return cls(dataset=c["dataset"], model=c["model"], rounds=c["rounds"],
                   batch_size=c["batch_size"], workers=c["workers"], lr=c["lr"],
                   eval_every=c["eval_every"], out_dir=str(folder), resume=True)

    def config(self) -> HubConfig:
        """The hub configuration (raises ConfigError on a bad value)."""
        if self.advanced:
            preset, mode = resolve(self.preset, codec=self.codec, topk=self.topk,
                                   local_steps=self.local_steps)
        else:
            preset, mode = resolve(self.preset)
        if self.updates == "async" and preset == "auto":  # nothing to measure: no rounds
            preset = "lan"
        return HubConfig(dataset=self.dataset, model=self.model, workers=self.workers,
                         rounds=self.rounds, batch_size=self.batch_size, lr=self.lr,
                         eval_every=self.eval_every, preset=preset, codec=mode.codec,
                         topk=mode.topk, local_steps=mode.local_steps, updates=self.updates,
                         max_staleness=self.max_staleness, aggregation=self.aggregation)

    def plan(self, app: AppConfig, device: DeviceChoice | None = None) -> HostPlan:
        """The HostPlan of these options (ConfigError on a bad value); ``device``: the
        local worker's (None: the best one)."""
        return HostPlan(self.config(), self.output_path(), resume=self.resume,
                        port=None if self.port == DEFAULT_PORT else self.port,
                        bind=app.bind, interfaces=app.interfaces, advertise=self.advertise,
                        name=self.name, train_here=self.train_here, device=device)

    def session_name(self) -> str:
        """The name advertised on the LAN."""
        return self.name.strip() or f"{socket.gethostname()} — {self.dataset}"

    def output_path(self) -> Path:
        """The output folder; ConfigError when it cannot hold this session (see
        ``check_output_folder``)."""
        if not self.out_dir.strip():
            raise ConfigError("choose an output folder")
        return check_output_folder(Path(self.out_dir).expanduser(), self.resume)


def check_output_folder(path: Path, resume: bool) -> Path:
    """``path`` if it can hold the session: a resume needs a checkpoint there, a new session
    a folder that holds no other (their metrics would mix). ConfigError otherwise."""
    if resume:
        if not OutputDir(path).has_checkpoint():
            raise ConfigError(f"{path} holds no checkpoint to resume")
    elif OutputDir(path).holds_session():
        raise ConfigError(f"{path} already holds a training session: resume it (--resume, or "
                          "Resume in the app) or choose a new folder")
    return path


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
        text = text.strip()
        rest = text.split("://", 1)[1] if "://" in text else text
        host, sep, port = rest.rpartition(":")
        if not sep:
            host, port = rest, str(DEFAULT_PORT)
        if not host or not port.isdigit() or not 0 < int(port) < 65534 or " " in host:
            raise ConfigError(f"“{text}” is not a hub address: use HOST, HOST:PORT or "
                              "tcp://HOST:PORT")
        return cls(host=host, port=int(port), label=f"{host}:{port}")


def default_output_folder(parent: str | None = None) -> str:
    """A fresh, timestamped run folder under ``parent`` (default: Documents/ComputeShare)."""
    base = Path(parent) if parent else Path(platformdirs.user_documents_dir()) / "ComputeShare"
    return str(base / time.strftime("run-%Y%m%d-%H%M%S"))


def worker_name() -> str:
    """This machine's name as workers show it on the hub."""
    return socket.gethostname() or "worker"
