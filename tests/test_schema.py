"""The session schema: each option is declared once, and the command line, the settings file,
HubConfig's checks and the hub's training are derived from that one declaration.

The round trip through the real Host dialog is in tests/ui/test_ui_schema.py; here:
no module outside the schema names an option's default (checked on the source, with a
self-test that the check catches each kind of copy), the command line's flags reach the
config and the settings file, join's flags reach the worker's plan, and the exit codes of
``--help`` and the manual (docs/cli.md) are the enum's.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

import computeshare_desktop
from computeshare_desktop import schema
from computeshare_desktop.app_options import AppConfig
from computeshare_desktop.cli import commands, fast
from computeshare_desktop.cli.main import build_parser
from computeshare_desktop.errors import ConfigError, ExitCode, exit_codes_text
from computeshare_desktop.gui.settings import Settings
from computeshare_desktop.hub.config import HubConfig, SessionOptions
from computeshare_desktop.join_options import JoinOptions
from computeshare_desktop.service.options import HostOptions, JoinTarget
from computeshare_desktop.worker import WorkerOptions, pick_device
from helpers.schema import flag_argv, other_value

ROOT = Path(computeshare_desktop.__file__).parent
CLI_PAGE = ROOT.parent / "docs" / "cli.md"  # the manual's command line page
SCHEMAS = (SessionOptions, HubConfig, HostOptions, AppConfig, JoinOptions)
# Where options are declared (their defaults are written there, and only there).
DECLARING = {"schema.py", "hub/config.py", "service/options.py", "app_options.py",
             "join_options.py"}
# Copies that are not copies, each with its reason.
ALLOWED = {
    ("service/join.py", "JoinPlan.name"): "the key's identity ('worker'), not --name's label",
    ("selftest.py", "HostOptions("): "the self-test's own short session, not defaults",
    ("hub/rounds.py", "Round.topk"): "the placeholder round before training; every round "
                                     "is opened with the session's own fraction",
}
# Classes whose fields are filled from options: any literal default there is a copy (or a
# drift); elsewhere, a field named like an option copies it only with the same value. The
# plans hold their options whole (HostPlan.options, JoinPlan.options): only the worker's
# core, which cannot import the schema's front ends, keeps a field per option.
HOLDERS = {"WorkerOptions"}


# ----------------------------------------------------------------- no second default
def _literal(node: ast.expr | None) -> Any:
    """The value of a literal (numbers, strings, bools, negative numbers); None else."""
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None


def _defaults() -> dict[str, set[Any]]:
    """Each option name: its defaults (the core's and every front end's)."""
    found: dict[str, set[Any]] = {}
    for cls in SCHEMAS:
        for name, option in schema.options(cls).items():
            values = {schema.default(cls, name), *option.fronts.values()}
            found.setdefault(name, set()).update(repr(v) for v in values)
    return found


def _flags() -> set[str]:
    return {o.flag for cls in SCHEMAS for o in schema.options(cls).values()
            if o.flag and not o.positional}


def _is_dataclass(node: ast.ClassDef) -> bool:
    return any("dataclass" in ast.unparse(d) for d in node.decorator_list)


def default_copies(sources: dict[str, str]) -> list[str]:
    """Where ``sources`` ({module path: text}) write an option's default outside the
    schema: a dataclass field, an argparse default, a lookup's fallback, a dialog field's
    value or range, a DEFAULT_ constant the schema does not use, a literal keyword given to
    a class that holds options."""
    names, flags = _defaults(), _flags()
    declared = "\n".join(text for rel, text in sources.items() if rel in DECLARING)
    holders = {cls.__name__ for cls in SCHEMAS} | HOLDERS
    found: list[str] = []

    def report(rel: str, what: str, node: ast.AST) -> None:
        if not any(rel == where and what.startswith(start) for where, start in ALLOWED):
            found.append(f"{rel}:{getattr(node, 'lineno', 0)} {what}")

    for rel, text in sorted(sources.items()):
        if rel in DECLARING:
            continue
        tree = ast.parse(text, rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and _is_dataclass(node):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                            and item.target.id in names and _literal(item.value) is not None \
                            and (node.name in HOLDERS or repr(_literal(item.value))
                                 in names[item.target.id]):
                        report(rel, f"{node.name}.{item.target.id}", item)
            elif isinstance(node, ast.Call):
                _call(rel, node, names, flags, holders, report)
        for stmt in tree.body:  # DEFAULT_ROUNDS = 600, unknown to the schema
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name) \
                    and "DEFAULT" in stmt.targets[0].id and _literal(stmt.value) is not None \
                    and repr(_literal(stmt.value)) in set().union(*names.values()) \
                    and stmt.targets[0].id not in declared:
                report(rel, stmt.targets[0].id, stmt)
    return found


DIALOG_SETTERS = {"setValue", "setChecked", "setRange", "setMinimum", "setMaximum",
                  "setSingleStep", "setDecimals", "setCurrentText", "setSpecialValueText"}


def _call(rel: str, node: ast.Call, names: dict[str, set[Any]], flags: set[str],
          holders: set[str], report: Any) -> None:
    func = node.func
    attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    args = [_literal(a) for a in node.args]
    words = {k.arg: k.value for k in node.keywords if k.arg}
    if attr == "add_argument" and args and args[0] in flags \
            and not ("default" in words and _literal(words["default"]) is None
                     and isinstance(words["default"], ast.Constant)):
        report(rel, f"add_argument({args[0]})", node)
    if attr in ("get", "getattr") and len(node.args) >= 2:
        key = args[-2]
        if key in names and _literal(node.args[-1]) is not None:
            report(rel, f"{attr}({key!r}, ...)", node)
    if attr in DIALOG_SETTERS and rel.startswith("gui/") and isinstance(func, ast.Attribute) \
            and isinstance(func.value, ast.Attribute) and func.value.attr in names \
            and any(a is not None for a in args):
        report(rel, f"self.{func.value.attr}.{attr}(...)", node)
    if attr in holders:
        for key, value in words.items():
            if key in names and _literal(value) is not None:
                report(rel, f"{attr}({key}=...)", node)


def _dialog_assignments(sources: dict[str, str]) -> list[str]:
    """``self.rounds = _spin(1, 1_000_000, ...)``: a dialog field made with literal bounds."""
    names, found = _defaults(), []
    for rel, text in sources.items():
        if not rel.startswith("gui/"):
            continue
        for node in ast.walk(ast.parse(text, rel)):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Attribute) \
                    and node.targets[0].attr in names and isinstance(node.value, ast.Call) \
                    and any(isinstance(a, ast.Constant) and isinstance(a.value, (int, float))
                            for a in node.value.args):
                found.append(f"{rel}:{node.lineno} self.{node.targets[0].attr} = ...")
    return found


def package_sources(root: Path = ROOT) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*.py"))}


def test_no_module_outside_the_schema_names_an_options_default():
    sources = package_sources()
    assert default_copies(sources) + _dialog_assignments(sources) == []


def test_the_default_check_finds_every_kind_of_copy():
    """The check must be able to fail: each line below is a copy it reports (the
    forms the package had before the schema)."""
    copies = {
        "cli/x.py": "p.add_argument('--batch-size', type=int, default=32)\n"
                    "p.add_argument('--no-balance', action='store_true')\n"
                    "DEFAULT_ROUNDS = 600\n"
                    "dataset = saved.get('dataset', 'mnist-sample')\n"
                    "resume = getattr(args, 'resume', False)\n",
        "service/y.py": "@dataclass(frozen=True)\nclass Options:\n    rounds: int = 600\n"
                        "@dataclass(frozen=True)\nclass HostPlan:\n    train_here: bool = False\n",
        "gui/z.py": "class D:\n    def __init__(self):\n"
                    "        self.rounds = _spin(1, 1_000_000, 600, 100)\n"
                    "        self.lr.setRange(0.0001, 10.0)\n"
                    "        core = WorkerOptions(first_contact_s=10.0)\n",
    }
    found = {line.split()[0] for line in default_copies(copies) + _dialog_assignments(copies)}
    assert found == {f"{rel}:{n + 1}" for rel, text in copies.items()
                     for n, line in enumerate(text.splitlines())
                     if not line.startswith(("@", "class", "    def"))}
    fine = {"cli/ok.py": "p.add_argument('--dataset', default=None, choices=x)\n"
                         "p.add_argument('-v', '--verbose', action='count', default=0)\n"
                         "v = saved.get('dataset', default(SessionOptions, 'dataset'))\n"}
    assert default_copies(fine) == []


# ----------------------------------------------------------------- the schema itself
def test_every_option_is_whole():
    """Flags are unique per command, bounds and choices hold for the defaults, a dialog
    field has a group and the bounds its widget needs, a saved option has a label."""
    for cls in SCHEMAS:
        kinds = schema.types(cls)
        for name, option in schema.options(cls).items():
            assert option.help, name
            for front in ("host", "demo", "join", "app", None):
                value = schema.default(cls, name, front)
                assert value is None or option.accepts(value), (cls, name, front, value)
            if option.label and cls is not JoinOptions:  # the Join dialog has no groups
                assert option.group in schema.GROUPS, name
                if kinds[name] in (int, float) and not option.allowed():
                    assert option.low() is not None and option.high() is not None, name
            assert not option.saved or option.label or name == "advanced", name
    for command in ("host", "demo", "join", "sessions"):
        parser = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
        strings = [s for a in parser._actions for s in a.option_strings]
        assert len(strings) == len(set(strings)), command


def test_hub_config_checks_come_from_the_schema():
    for name, bad in [("rounds", 0), ("lr", 0.0), ("momentum", 1.0), ("codec", "gzip"),
                      ("topk", 1.5), ("outer", "adam"), ("updates", "later"),
                      ("max_staleness", -1), ("aggregation", "max"), ("dataset", "x")]:
        with pytest.raises(ConfigError, match=schema.spec(HubConfig, name).error
                           .replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            HubConfig(**{name: bad})
    with pytest.raises(ConfigError, match="local steps need sync rounds"):
        HubConfig(updates="async", local_steps=2)
    old = {k: v for k, v in HubConfig().to_json().items() if k != "weight_decay"}
    assert HubConfig.from_json(json.loads(json.dumps(old))) == HubConfig()  # an old session


# ----------------------------------------------------------------- command line -> config
def host_flags() -> list[str]:
    return [n for n, o in schema.options(HostOptions).items() if o.flag and "host" in o.commands]


@pytest.mark.parametrize("name", host_flags())
def test_each_host_flag_reaches_the_options_the_config_and_the_settings(name, tmp_path):
    value = other_value(HostOptions, name, "host", tmp_path)
    options = commands.host_options(build_parser().parse_args(["host", *flag_argv(HostOptions,
                                                                             name, value)]))
    assert getattr(options, name) == value
    config = options.config()
    if name in {f.name for f in dataclasses.fields(SessionOptions)}:
        assert getattr(config, name) == value
    settings = Settings(tmp_path / "settings.json")
    settings.remember_host(dataclasses.replace(options, out_dir=str(tmp_path / "runs" / "r")))
    settings.save()
    loaded = Settings(tmp_path / "settings.json").host_options()
    saved = schema.spec(HostOptions, name).saved
    assert getattr(loaded, name) == (value if saved else schema.default(HostOptions, name))
    if saved:
        assert dataclasses.replace(loaded, out_dir=options.out_dir, pin=options.pin,
                                   train_here=options.train_here).config() == config


def test_the_command_lines_defaults_are_the_schemas(tmp_path):
    options = commands.host_options(build_parser().parse_args(["host"]))
    assert options == HostOptions(**{**schema.defaults(HostOptions, "host"), "codec": "zstd",
                                     "topk": 0.01, "local_steps": 0})
    demo = commands._host_plan(build_parser().parse_args(["demo"]))
    assert (demo.bind, demo.port, demo.options.advertise, str(demo.out_dir)) == \
        ("127.0.0.1", 0, False, "computeshare-demo")
    asynchronous = commands.host_options(build_parser().parse_args(
        ["host", "--mode", "async", "--workers", "3"])).config()
    assert (asynchronous.rounds, asynchronous.preset) == (1800, "lan")  # the two rules


def test_settings_drop_what_no_longer_fits():
    kept = schema.restore(HostOptions, {"rounds": "many", "lr": 1, "workers": True,
                                        "codec": "gzip", "port": 70000, "topk": 0.5,
                                        "pin": "123456", "unknown": 1})
    assert kept == {"lr": 1.0, "topk": 0.5}


# ----------------------------------------------------------------- join
def join_flags() -> list[str]:
    return [n for n, o in schema.options(JoinOptions).items() if o.flag and "join" in o.commands]


@pytest.mark.parametrize("name", join_flags())
def test_each_join_flag_reaches_the_plan(name, tmp_path):
    value = other_value(JoinOptions, name, "join", tmp_path)
    if name == "address":
        value = "hub.lan:7400"
    if name == "device":
        value = "cpu"
    if name == "trust_code":
        value = "ab" * 32  # a sha256
    if name == "cache_size":
        value = "500MB"
    options = commands.join_options(build_parser().parse_args(["join", *flag_argv(JoinOptions,
                                                                             name, value)]))
    assert getattr(options, name) == value
    plan = commands.cli_join_plan(options, JoinTarget.from_address("h"), "1234",
                                  pick_device("cpu"))
    assert plan.options == dataclasses.replace(options, pin="1234")  # every flag, whole


def test_join_defaults_are_the_schemas():
    options = commands.join_options(build_parser().parse_args(["join"]))
    assert options == JoinOptions()
    for field in ("first_contact_s", "give_up_s", "max_rate", "cache_size"):
        assert getattr(WorkerOptions(pin="", name=""), field) == schema.default(JoinOptions,
                                                                                 field)
    with pytest.raises(ConfigError, match="--max-rate"):
        commands.join_options(build_parser().parse_args(["join", "--max-rate", "-1"]))
    kinds = {**schema.types(JoinOptions), **schema.types(AppConfig)}
    assert fast.VALUED == {o.flag for n, o in {**schema.options(JoinOptions),
                                               **schema.options(AppConfig)}.items()
                           if o.flag and "join" in o.commands and not o.positional
                           and kinds[n] is not bool}  # a switch takes no value


# ----------------------------------------------------------------- exit codes
def test_help_lists_the_exit_codes_of_the_enum(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["host", "--help"])
    out = capsys.readouterr().out
    assert exit_codes_text() in out
    for code in ExitCode:
        assert re.search(rf"^  {code.value} +{re.escape(code.meaning)}$", out, re.M), code


def test_the_manuals_table_of_exit_codes_is_the_enum():
    text = CLI_PAGE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\d+)` \| (.+?) \|$", text.split("## Exit codes", 1)[1], re.M)
    assert [(int(c), m) for c, m in rows] == [(c.value, c.meaning) for c in ExitCode]
