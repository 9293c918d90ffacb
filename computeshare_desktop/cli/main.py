"""``computeshare``: host, join, demo, evaluate, predict and self-test from a terminal.

Every failure the user can act on ends as one line on stderr and a documented exit code;
tracebacks are for bugs only (and for -vv).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

from ..errors import ComputeShareError, ExitCode, exit_codes_text
from ..join_options import JoinOptions
from ..command_options import CacheOptions, OutputOptions, SessionsOptions
from ..model_file_options import ModelFileOptions
from ..schema import add_arguments, options
from ..service.options import AppConfig, HostOptions
from . import commands
from . import doctor as doctor_cli
from .progress import setup_logging

log = logging.getLogger(__name__)

EXIT_CODES = exit_codes_text()
# The session options' flags come from the schema (hub/config.py, service/options.py,
# join_options.py); each command adds those it offers, in this order.
HOST_FRONT = ("pin", "workers")  # before the training options, as they were


def _common(p: argparse.ArgumentParser, command: str) -> None:
    add_arguments(p, OutputOptions, command)


def _session_args(p: argparse.ArgumentParser, command: str) -> None:
    """The options of ``host`` or ``demo``: the session's, then where to host it."""
    add_arguments(p, HostOptions, command, HOST_FRONT)
    add_arguments(p, HostOptions, command, [n for n in options(HostOptions) if n not in HOST_FRONT])
    add_arguments(p, AppConfig, command)


def _model_file_args(p: argparse.ArgumentParser, command: str) -> None:
    """The options of ``evaluate`` or ``predict``: the saved model (and for predict its
    inputs), the session's data and model spec, then how to print."""
    add_arguments(p, ModelFileOptions, command)
    _common(p, command)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="computeshare", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Pool the machines you have to train one PyTorch model over the LAN.",
        epilog=EXIT_CODES, allow_abbrev=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    fmt = argparse.RawDescriptionHelpFormatter

    host = sub.add_parser("host", help="run a hub (parameter server) until training is done",
                          formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    _session_args(host, "host")
    _common(host, "host")

    join = sub.add_parser("join", help="join a hub as a worker", formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    add_arguments(join, JoinOptions, "join", ["address", "session"])
    add_arguments(join, AppConfig, "join")
    add_arguments(join, JoinOptions, "join", [n for n in options(JoinOptions) if n not in ("address", "session")])
    _common(join, "join")

    demo = sub.add_parser("demo", help="hub plus local workers on this machine, offline",
                          formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    _session_args(demo, "demo")
    _common(demo, "demo")

    ses = sub.add_parser("sessions", help="list the ComputeShare sessions on the LAN",
                         formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    add_arguments(ses, SessionsOptions, "sessions", ["watch"])
    add_arguments(ses, AppConfig, "sessions")
    add_arguments(ses, JoinOptions, "sessions")
    add_arguments(ses, SessionsOptions, "sessions", ["json"])
    _common(ses, "sessions")

    ev = sub.add_parser("evaluate", help="print the test accuracy of a saved model (.pth or .pt2)",
                        formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    _model_file_args(ev, "evaluate")

    pr = sub.add_parser("predict", help="print a saved model's top classes for image files or CSV rows",
                        formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    _model_file_args(pr, "predict")

    ca = sub.add_parser("cache", help="where this machine keeps the samples hubs sent its workers, and how much; --clear empties it",
                        formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    add_arguments(ca, CacheOptions, "cache")
    _common(ca, "cache")

    doctor_cli.add_parser(sub)

    st = sub.add_parser("self-test", help="check this install end to end, offline (Qt offscreen, training on loopback, the saved model, mDNS)",
                        formatter_class=fmt, epilog="exit codes:\n  0  every check passed\n  1  a check failed (its FAIL line says why)", allow_abbrev=False)
    _common(st, "self-test")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``computeshare`` console script."""
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        run = getattr(args, "run", None) or getattr(commands, args.command.replace("-", "_"))
        return int(run(args))
    except ComputeShareError as exc:
        if args.verbose >= 2:
            log.exception("failed")
        print(f"computeshare {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"computeshare {args.command}: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
