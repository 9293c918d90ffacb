"""The schema of the commands' own flags: how much a command says, what ``sessions`` and
``cache`` do, and what ``doctor`` checks. Each is declared once (see ``schema``), as the
session's options are, so no command writes a flag by hand. Light to import: the command
line reads its flags before torch loads."""

from __future__ import annotations

from dataclasses import dataclass

from .defaults import DEFAULT_PORT
from .protocol.ports import HubPorts
from .schema import option

TALKING = ("host", "join", "demo", "sessions", "evaluate", "predict", "cache")
VERBOSE = (*TALKING, "doctor", "self-test", "app")


@dataclass(frozen=True, slots=True)
class OutputOptions:
    """How much a command says."""

    verbose: int = option(0, "more log output (-vv: debug)", flag="--verbose", short="-v",
                          counts=True, commands=VERBOSE,
                          help_for={"app": "log to stderr (-v: info, -vv: debug)"})
    quiet: bool = option(False, "no progress bar", flag="--quiet", commands=TALKING)


@dataclass(frozen=True, slots=True)
class SessionsOptions:
    """``computeshare sessions``: how the list is shown."""

    watch: bool = option(False, "keep the list live until Ctrl-C", flag="--watch",
                         commands=("sessions",))
    json: bool = option(False, "print JSON lines instead of sentences", flag="--json",
                        commands=("sessions",))


@dataclass(frozen=True, slots=True)
class CacheOptions:
    """``computeshare cache``: show the shard cache, or empty it."""

    clear: bool = option(False, "remove every shard kept here (the next session fetches "
                         "them again)", flag="--clear", commands=("cache",))


@dataclass(frozen=True, slots=True)
class DoctorFlags:
    """``computeshare doctor``: what the network check measures."""

    hub: str | None = option(
        None, "also measure the round trip and bandwidth to this hub over its encrypted "
        "channel (no PIN needed), and check that its advert arrives", flag="--hub",
        commands=("doctor",), metavar="HOST[:PORT]")
    port: int | None = option(
        None, f"the hub ports to test on this machine ({HubPorts.LAYOUT}; default "
        f"{DEFAULT_PORT}, a hub's)", flag="--port", commands=("doctor",))
    interfaces: tuple[str, ...] | None = option(
        None, "check this interface or address (default: the route to --hub, else the first "
        "LAN address)", flag="--interface", commands=("doctor",), metavar="IF", repeat=True)
    mdns_wait: float = option(3.0, "how long to listen for mDNS adverts (default 3 s)",
                              flag="--mdns-wait", commands=("doctor",), metavar="S")
    step_ms: float = option(100.0, "compute time of one training step the preset estimate "
                            "assumes (default 100 ms)", flag="--step-ms",
                            commands=("doctor",), metavar="MS")
    json: bool = option(False, "print the report as JSON", flag="--json",
                        commands=("doctor",))


@dataclass(frozen=True, slots=True)
class AppFlags:
    """``computeshare-desktop``'s own flags (beside AppConfig's and Qt's)."""

    self_test: bool = option(
        False, "check this install end to end without a window (Qt offscreen, training on "
        "loopback, the saved model, mDNS); exit code 0 when every check passed",
        flag="--self-test", commands=("app",))
