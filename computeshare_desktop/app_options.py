"""How the app and the commands reach the network: where a hub listens, which interfaces
sessions are found and announced on. Declared in the schema (see ``schema``); light to
import (the command line reads its flags before torch loads)."""

from __future__ import annotations

from dataclasses import dataclass

from .schema import option


@dataclass(frozen=True, slots=True)
class AppConfig:
    """How the app talks to the network; filled from the command line (tests use loopback)."""

    interfaces: tuple[str, ...] | None = option(
        None, "advertise on this interface or address only (repeatable; default: all)",
        flag="--interface", commands=("host", "join", "sessions", "app"), metavar="IF",
        repeat=True, help_for={
            "join": "look for sessions on this interface or address only (repeatable)",
            "sessions": "look on this interface or address only (repeatable)",
            "app": "find and announce sessions on this interface or address only "
                   "(repeatable; default: all)"})  # mDNS browse/advertise here (None: all)
    bind: str = option(
        "0.0.0.0", "address to listen on (default {default}: all)", flag="--bind",
        commands=("host", "app"), fronts={"demo": "127.0.0.1"},
        help_for={"app": "address a hosted session listens on (default {default})"})
    refresh_ms: int = 100  # how often windows drain their event queues
