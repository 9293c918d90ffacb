"""``computeshare doctor``: the network check from a terminal (service/doctor.py does it)."""

from __future__ import annotations

import argparse
import json

from ..errors import ConfigError
from ..protocol.ports import HubPorts
from ..schema import default
from ..service.doctor import DoctorOptions, diagnose
from ..service.doctor_report import EXIT_CODES_TEXT
from ..service.options import HostOptions

HELP = ("check this machine's network for ComputeShare: interfaces, mDNS, the hub's ports; "
        "with --hub, the link to that hub and the preset it suits")


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """The ``doctor`` subcommand; its handler is ``run``."""
    p = sub.add_parser("doctor", help=HELP, description=HELP.capitalize() + ".",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=EXIT_CODES_TEXT, allow_abbrev=False)
    p.add_argument("--hub", metavar="HOST[:PORT]", default=None,
                   help="also measure the round trip and bandwidth to this hub over its "
                        "encrypted channel (no PIN needed), and check that its advert arrives")
    p.add_argument("--port", type=int, default=None,
                   help=f"the hub ports to test on this machine ({HubPorts.LAYOUT}; default "
                        f"{default(HostOptions, 'port')}, a hub's)")
    p.add_argument("--interface", dest="interfaces", action="append", metavar="IF",
                   default=None, help="check this interface or address (default: the route "
                                      "to --hub, else the first LAN address)")
    p.add_argument("--mdns-wait", type=float, default=3.0, metavar="S",
                   help="how long to listen for mDNS adverts (default 3 s)")
    p.add_argument("--step-ms", type=float, default=100.0, metavar="MS",
                   help="compute time of one training step the preset estimate assumes "
                        "(default 100 ms)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="more log output (-vv: debug)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the report; 0 when every check passed, 1 when one failed."""
    port = default(HostOptions, "port") if args.port is None else args.port
    if not HubPorts.valid_request(port):
        raise ConfigError(f"--port {port} is not a port with two more after it")
    options = DoctorOptions(hub=args.hub, port=port, mdns_wait_s=max(0.5, args.mdns_wait),
                            step_ms=args.step_ms,
                            interfaces=tuple(args.interfaces) if args.interfaces else None)
    report = diagnose(options)
    print(json.dumps(report.to_json(), indent=2) if args.json else report.text(), flush=True)
    return report.exit_code
