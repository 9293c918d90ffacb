"""``computeshare doctor``: the network check from a terminal (service/doctor.py does it)."""

from __future__ import annotations

import argparse
import json

from ..errors import ConfigError
from ..protocol.ports import HubPorts
from ..command_options import DoctorFlags, OutputOptions
from ..schema import add_arguments, default
from ..service.doctor import DoctorOptions, diagnose
from ..service.doctor_report import EXIT_CODES_TEXT
from ..service.options import HostOptions

HELP = ("check this machine's network for ComputeShare: interfaces, mDNS, the hub's ports; "
        "with --hub, the link to that hub and the preset it suits")


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """The ``doctor`` subcommand; its handler is ``run``."""
    p = sub.add_parser("doctor", help=HELP, description=HELP[:1].upper() + HELP[1:] + ".",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=EXIT_CODES_TEXT, allow_abbrev=False)
    add_arguments(p, DoctorFlags, "doctor")
    add_arguments(p, OutputOptions, "doctor")
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
