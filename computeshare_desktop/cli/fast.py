"""The first thing ``computeshare`` runs: answers that must not wait for torch to load.

``computeshare join HOST:PORT`` with nothing listening there is told so (exit code 3) at
once: the address is checked here, before the full command line and its imports load.
Everything else goes straight to ``cli.main``.
"""

from __future__ import annotations

import itertools
import sys
from typing import Sequence

from ..addresses import parse_address
from ..app_options import AppConfig
from ..errors import ConfigError, ExitCode, HubUnreachableError
from ..join_options import JoinOptions
from ..reach import probe_hub
from ..schema import options, spec, valued_flags
from .terminal import make_printable

# join's options that take a value (the address is the first argument that is not one)
VALUED = valued_flags(JoinOptions, "join") | valued_flags(AppConfig, "join")
WAIT = spec(JoinOptions, "wait_s").flag
UNREACHABLE = ExitCode.UNREACHABLE
# join's flags whose text has its own check (--cache-size): a bad one is the full parser's
# usage error (exit 2) at once, before any hub is asked
CHECKED = {o.flag: o for o in options(JoinOptions).values()
           if o.valid is not None and o.flag and o.flag.startswith("--")}


def join_address(argv: Sequence[str]) -> tuple[str, int] | None:
    """(host, port) of ``join HOST[:PORT]`` when the hub must answer now; None otherwise
    (another command, no address, ``--wait``, ``--help``, or an address the full parser
    should judge)."""
    if not argv or argv[0] != "join":
        return None
    args = list(argv[1:])
    if any(a in ("-h", "--help") or a == WAIT or a.startswith(f"{WAIT}=") for a in args):
        return None
    if any(_refused(arg, nxt) for arg, nxt in itertools.pairwise([*args, ""])):
        return None
    address, skip = None, False
    for arg in args:
        if skip:
            skip = False
        elif arg in VALUED:
            skip = True
        elif not arg.startswith("-"):
            address = arg
            break
    if address is None:
        return None
    try:
        return parse_address(address)
    except ConfigError:
        return None


def _refused(arg: str, value: str) -> bool:
    """Whether ``arg`` (then ``value``) is a checked flag whose value its check refuses."""
    flag, eq, inline = arg.partition("=")
    found = CHECKED.get(flag)
    if found is None or found.valid is None:
        return False
    try:
        return not found.valid(inline if eq else value)
    except (TypeError, ValueError):
        return True


def precheck(argv: Sequence[str]) -> int | None:
    """The exit code when the command can be answered now, else None."""
    target = join_address(argv)
    if target is None:
        return None
    host, port = target
    try:
        probe_hub(host, port)
    except HubUnreachableError as exc:
        print(f"computeshare join: error: {exc}", file=sys.stderr)
        return UNREACHABLE
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``computeshare`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):  # Windows pipes cannot encode every name
        make_printable(stream)
    code = precheck(args)
    if code is not None:
        return code
    from .main import main as full

    return full(args)
