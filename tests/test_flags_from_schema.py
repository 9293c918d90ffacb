"""Every flag of every command comes from a schema (schema.add_arguments over an options
dataclass): no module of the package writes a flag by hand with ``add_argument``, but for
argparse's own ``--version`` (as ``-h``, it is argparse's, not an option)."""

from __future__ import annotations

import ast
from pathlib import Path

import computeshare_desktop
from computeshare_desktop.cli.main import build_parser
from computeshare_desktop.gui.app import parse_args

PACKAGE = Path(computeshare_desktop.__file__).parent
ARGPARSE_OWN = {"--version"}


def hand_written_flags(source: str) -> list[str]:
    """The first argument of every ``.add_argument(...)`` call in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "add_argument" and node.args:
            first = node.args[0]
            found.append(ast.unparse(first) if not isinstance(first, ast.Constant)
                         else str(first.value))
    return found


def test_no_module_writes_a_flag_by_hand():
    by_hand = {f"{path.relative_to(PACKAGE)}: {flag}"
               for path in PACKAGE.rglob("*.py") if path.name != "schema.py"
               for flag in hand_written_flags(path.read_text(encoding="utf-8"))
               if flag not in ARGPARSE_OWN}
    assert by_hand == set()


def test_the_detector_sees_a_flag_written_by_hand():
    assert hand_written_flags("p.add_argument('--watch', action='store_true')\n"
                              "p.add_argument(*flags, **kw)\n") == ["--watch", "*flags"]


def test_the_schema_flags_parse_as_the_hand_written_ones_did():
    parser = build_parser()
    args = parser.parse_args(["sessions", "--watch", "--json", "-vv"])
    assert (args.watch, args.json, args.verbose, args.quiet) == (True, True, 2, False)
    assert parser.parse_args(["cache", "--clear", "--quiet"]).clear is True
    doctor = parser.parse_args(["doctor", "--hub", "h:1", "--interface", "a", "--interface",
                                "b", "--mdns-wait", "1.5", "--json"])
    assert (doctor.hub, doctor.interfaces, doctor.mdns_wait, doctor.step_ms, doctor.port) \
        == ("h:1", ["a", "b"], 1.5, 100.0, None)
    ev = parser.parse_args(["evaluate", "m.pt2", "--dataset", "d", "--model", "x"])
    assert (ev.dataset, ev.model) == ("d", "x")
    assert (parser.parse_args(["evaluate", "m.pt2"]).dataset, ev.verbose) == (None, 0)
    app = parse_args(["-v", "--self-test"])
    assert (app.verbose, app.self_test) == (1, True)
