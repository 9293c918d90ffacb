"""``computeshare``: host, join, demo, evaluate and self-test from a terminal.

Every failure the user can act on ends as one line on stderr and a documented exit code;
tracebacks are for bugs only (and for -vv).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

from ..codec import CODECS
from ..hub.config import AGGREGATIONS, OUTER_OPTIMIZERS, UPDATE_MODES
from ..hub.presets import PRESET_CHOICES, PRESETS
from ..data import DATASETS
from ..errors import ComputeShareError
from ..models import MODELS
from ..defaults import DEFAULT_PORT
from ..worker import DEVICE_CHOICES
from . import commands
from .progress import setup_logging

log = logging.getLogger(__name__)

EXIT_CODES = """exit codes:
  0  success
  1  unexpected error (a bug: please report it with -vv output)
  2  bad arguments or settings
  3  hub unreachable (wrong address, hub not running, firewall)
  4  port already in use
  5  refused by the hub (wrong PIN, session full or finished, different model)
  6  dataset not available offline
  7  the hub stopped the session before its end (it can resume it later)
  130 interrupted (Ctrl-C)"""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _session_args(p: argparse.ArgumentParser, rounds: int) -> None:
    p.add_argument("--rounds", type=int, default=None, help=f"global batches to train (default {rounds}; async: a round is one worker's batch, and the default is {rounds} times the workers)")
    p.add_argument("--batch-size", type=int, default=32, help="samples per worker and round (default %(default)s)")
    p.add_argument("--dataset", default="mnist-sample", choices=DATASETS, help="default %(default)s (bundled, offline)")
    p.add_argument("--model", default="simplenet", choices=MODELS, help="default %(default)s")
    p.add_argument("--lr", type=float, default=0.01, help="base learning rate, scaled by the number of workers (default %(default)s)")
    p.add_argument("--preset", default=None, choices=PRESET_CHOICES, help="the link: " + "; ".join(f"{p.name}: {p.summary}".replace("%", "%%") for p in PRESETS.values()) + "; auto (default): measure the first rounds, then pick one")
    p.add_argument("--codec", default=None, choices=CODECS, help="how updates and model deltas travel (overrides the preset); lossy codecs use error feedback")
    p.add_argument("--topk", type=float, default=None, metavar="FRACTION", help="the fraction of values the topk codec sends (default 0.01)")
    p.add_argument("--topk-warmup", type=int, default=-1, metavar="ROUNDS", help="rounds over which top-k falls from 25%% to its fraction (default: a tenth of the session, one epoch at most; 0: none)")
    p.add_argument("--local-steps", type=int, default=None, metavar="H", help="0: a gradient per round (synchronous SGD); H: H local SGD steps per round, then push the change (overrides the preset)")
    p.add_argument("--outer", default="auto", choices=OUTER_OPTIMIZERS, help="outer optimizer of local steps: sgd (momentum), nesterov (DiLoCo); auto: nesterov when H > 1")
    p.add_argument("--outer-lr", type=float, default=0.7, help="learning rate of the Nesterov outer step (default %(default)s)")
    p.add_argument("--mode", default="sync", choices=UPDATE_MODES, help="sync (default): rounds that average every worker's update; async: apply each update as it arrives, so no worker waits for a slower one")
    p.add_argument("--max-staleness", type=int, default=8, metavar="S", help="async: refuse updates computed more than S versions back (default %(default)s); older ones also get a smaller learning rate")
    p.add_argument("--aggregate", default="mean", choices=AGGREGATIONS, help="mean (default); trimmed-mean or median: clip update norms and outvote a faulty or hostile worker (needs 3 or more workers to outvote one)")
    p.add_argument("--no-balance", action="store_true", help="equal batches for every worker, whatever its speed")
    p.add_argument("--snapshot-every", type=int, default=0, metavar="R", help="keep a copy of the weights every R rounds in OUT/snapshots (default: none)")
    p.add_argument("--seed", type=int, default=0, help="initial weights and data order (default %(default)s)")
    p.add_argument("--eval-every", type=int, default=100, help="rounds between test evaluations (default %(default)s)")
    p.add_argument("--out", default=None, help="output folder (default ./computeshare-run)")


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
    host.add_argument("--pin", help="session PIN workers must type (default: COMPUTESHARE_PIN, else a random 6-digit PIN, printed); on a shared machine prefer COMPUTESHARE_PIN: other users can see command lines")
    host.add_argument("--workers", type=int, default=2, help="number of shards = workers expected (default %(default)s)")
    _session_args(host, rounds=600)
    host.add_argument("--bind", default="0.0.0.0", help="address to listen on (default %(default)s: all)")
    host.add_argument("--port", type=int, default=DEFAULT_PORT, help="request port; events use port+1 (default %(default)s)")
    host.add_argument("--resume", action="store_true", help="continue the session saved in --out from its last checkpoint")
    host.add_argument("--name", default=None, help="session name shown on the LAN (default: HOST — DATASET)")
    host.add_argument("--interface", action="append", default=None, metavar="IF", help="advertise on this interface or address only (repeatable; default: all)")
    host.add_argument("--no-advertise", action="store_true", help="do not announce the session on the LAN (workers then need the address)")
    _common(host)

    join = sub.add_parser("join", help="join a hub as a worker", formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    join.add_argument("address", nargs="?", default=None, help="hub address: HOST, HOST:PORT or tcp://HOST:PORT (default: find the session on the LAN)")
    join.add_argument("--session", default=None, help="with no address: the session name or id to join when there are several")
    join.add_argument("--interface", action="append", default=None, metavar="IF", help="look for sessions on this interface or address only (repeatable)")
    join.add_argument("--scan", type=float, default=3.0, help="seconds to look for sessions (default %(default)s)")
    join.add_argument("--pin", help="the PIN the hub shows; without it: COMPUTESHARE_PIN, else a prompt (other users can see command lines, not prompts)")
    join.add_argument("--device", default="auto", choices=DEVICE_CHOICES, help="default %(default)s: CUDA, then MPS, then CPU")
    join.add_argument("--name", default=None, help="worker name shown on the hub (default: this machine's name and device, e.g. \"vm · CPU\")")
    join.add_argument("--threads", type=int, default=0, help="CPU threads for torch (default: torch's choice)")
    join.add_argument("--max-rate", type=float, default=0.0, metavar="SAMPLES_PER_S", help="compute at most this many samples per second, to share this machine politely (default: no limit)")
    join.add_argument("--wait", type=float, default=0.0, metavar="SECONDS", help="keep trying a hub that does not listen yet for this long (scripts that start the hub and its workers together; default: say why at once)")
    join.add_argument("--give-up", type=float, default=120.0, help="seconds without an answer before giving up (default %(default)s)")
    _common(join)

    demo = sub.add_parser("demo", help="hub plus local workers on this machine, offline",
                          formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    demo.add_argument("--workers", type=int, default=2, help="local worker processes (default %(default)s)")
    _session_args(demo, rounds=600)
    _common(demo)

    ses = sub.add_parser("sessions", help="list the ComputeShare sessions on the LAN",
                         formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    ses.add_argument("--watch", action="store_true", help="keep the list live until Ctrl-C")
    ses.add_argument("--interface", action="append", default=None, metavar="IF", help="look on this interface or address only (repeatable)")
    ses.add_argument("--scan", type=float, default=3.0, help="seconds to look (default %(default)s)")
    ses.add_argument("--json", action="store_true", help="print JSON lines instead of sentences")
    _common(ses)

    ev = sub.add_parser("evaluate", help="print the test accuracy of a saved model",
                        formatter_class=fmt, epilog=EXIT_CODES, allow_abbrev=False)
    ev.add_argument("model_file", help="a trained_model.pth")
    ev.add_argument("--dataset", default=None, choices=DATASETS, help="default: from session.json beside the file, else mnist-sample")
    ev.add_argument("--model", default=None, choices=MODELS, help="default: from session.json beside the file, else simplenet")
    ev.add_argument("--json", action="store_true", help="print a JSON object instead of a sentence")
    _common(ev)

    st = sub.add_parser("self-test", help="check this install end to end, offline (Qt offscreen, training on loopback, the saved model, mDNS)",
                        formatter_class=fmt, epilog="exit codes:\n  0  every check passed\n  1  a check failed (its FAIL line says why)", allow_abbrev=False)
    st.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``computeshare`` console script."""
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        return getattr(commands, args.command.replace("-", "_"))(args)
    except ComputeShareError as exc:
        if args.verbose >= 2:
            log.exception("failed")
        print(f"computeshare {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"computeshare {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
