"""One declaration per option: its type, default, checks, flag, dialog field and settings key.

An option is a field of a frozen config dataclass declared with ``option(default, help,
...)``: the dataclass keeps its real attribute types, and the field's metadata holds the
``Option``. Everything else is derived from it here: the command line's arguments
(``add_arguments``, ``from_args``), the checks (``check``), the settings file's keys and
their types (``saved``, ``restore``), and the Host dialog's fields (gui/fields.py reads
``label``, ``group``, the bounds and the widget hints). A default written in one place
cannot drift.

Each front end may start from its own default where the schema says so, in the option's
``fronts`` ({"host": ..., "demo": ..., "join": ..., "app": ...}); the dataclass default is
the core's. Qt-free, and light to import (no torch).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from .errors import ConfigError

P = ParamSpec("P")
T = TypeVar("T")
METADATA_KEY = "computeshare.option"

# The Host dialog's groups, in the order it shows them, and their titles.
TRAINING, WORKERS, LINK, ADVANCED, NETWORK = "training", "workers", "link", "advanced", "network"
RECIPE = "recipe"
GROUPS: dict[str, str] = {
    TRAINING: "Training",
    RECIPE: "Training recipe: optimizer, schedule, precision",
    WORKERS: "Workers and results",
    LINK: "Speed on your network",
    ADVANCED: "Advanced: choose the codec and local steps yourself",
    NETWORK: "Network",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Option:
    """What one option is, besides its name, type and default (those are the field's)."""

    help: str  # the command line's help; "{default}" is replaced by the default
    flag: str | None = None  # "--batch-size"; a bool option's flag may be "--no-NAME"
    short: str = ""  # the flag's one-letter form too ("-v")
    counts: bool = False  # an int the flag counts (-v, -vv)
    commands: tuple[str, ...] = ()  # the commands whose parser offers the flag
    metavar: str | None = None
    repeat: bool = False  # the flag may be given again (a list; None when never given)
    positional: bool = False  # the flag is the argument's name ("address"); optional, or
    # one or more when it repeats ("FILE...")
    required: bool = False  # a positional that must be given ("MODEL_FILE")
    help_for: Mapping[str, str] = dataclasses.field(default_factory=dict)  # per command
    choices: Sequence[str] = ()  # the values allowed (and offered by the CLI and the dialog)
    ge: float | None = None  # checks: value >= ge, > gt, <= le, < lt
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    valid: Callable[[Any], bool] | None = None  # a check beyond the choices and bounds (it
    # may raise ConfigError to say exactly what is wrong)
    editable: bool = False  # the choices are suggestions: any value ``valid`` accepts goes
    # (no argparse choices; an editable combo box in the dialog)
    error: str = ""  # the ConfigError's text when a check fails
    fronts: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # front end: default
    auto: Callable[[Mapping[str, Any], Any], Any] | None = None  # the command line's value
    # when the flag is not given, from the other values and the default ("rounds")
    saved: bool = False  # remembered in the settings file
    label: str = ""  # the Host dialog's label ("": not in the dialog); a check box's text
    group: str = ""  # the dialog group (see GROUPS)
    tip: str = ""  # the dialog field's tool tip
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)  # choice: its text
    # The dialog's widget: a spin box's step and decimals, its range where the checks leave
    # it open, the text it shows at its minimum ("only at the end"); a line's placeholder.
    step: float = 1
    decimals: int = 0
    minimum: float | None = None
    maximum: float | None = None
    special: str = ""
    placeholder: str = ""
    plain: bool = False  # a number shown without digit grouping (a port)
    section: str = ""  # a bool shown as the check box of this group's box (its fields count
    # only when it is checked)

    def allowed(self) -> tuple[str, ...]:
        """The choices (an empty tuple: any value of the type)."""
        return tuple(self.choices)

    def accepts(self, value: Any) -> bool:
        """True when ``value`` passes this option's checks."""
        allowed = self.allowed()
        if self.valid is not None:
            if not self.valid(value):
                return False
        elif allowed and value not in allowed:
            return False
        return all(bound is None or test(value, bound) for bound, test in (
            (self.ge, _ge), (self.gt, _gt), (self.le, _le), (self.lt, _lt)))

    def low(self) -> float | None:
        """The smallest value a dialog field offers."""
        return self.ge if self.ge is not None else self.minimum

    def high(self) -> float | None:
        """The largest value a dialog field offers."""
        return self.le if self.le is not None else self.maximum


def _ge(value: Any, bound: float) -> bool:
    return bool(value >= bound)


def _gt(value: Any, bound: float) -> bool:
    return bool(value > bound)


def _le(value: Any, bound: float) -> bool:
    return bool(value <= bound)


def _lt(value: Any, bound: float) -> bool:
    return bool(value < bound)


def _declare(make: Callable[P, Option]) -> Callable[Concatenate[T, P], T]:
    def option(default: T, /, *args: P.args, **kwargs: P.kwargs) -> T:
        """A dataclass field: ``default`` plus its Option (typed as ``default``)."""
        spec = make(*args, **kwargs)
        return dataclasses.field(default=default, metadata={METADATA_KEY: spec})

    return option


option = _declare(Option)
"""``name: int = option(600, "help", flag="--name", ...)``: a field and its Option."""


@dataclasses.dataclass(frozen=True, slots=True)
class Rule:
    """A check across options (e.g. async updates exclude local steps)."""

    holds: Callable[[Any], bool]
    error: str


# ----------------------------------------------------------------- reading the schema
def options(cls: type) -> dict[str, Option]:
    """The options of a dataclass (an instance's class works too), in declaration order."""
    return {f.name: f.metadata[METADATA_KEY] for f in dataclasses.fields(cls)
            if METADATA_KEY in f.metadata}


def spec(cls: type, name: str) -> Option:
    """The Option of ``cls.name``."""
    return options(cls)[name]


def default(cls: type, name: str, front: str | None = None) -> Any:
    """The default of ``cls.name``; ``front``'s own where the schema gives one."""
    found = options(cls)[name]
    if front is not None and front in found.fronts:
        return found.fronts[front]
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    return field.default


def front_field(cls: type, name: str, front: str) -> Any:
    """``cls.name`` declared again (same Option) for a subclass that is ``front``'s own
    options: it starts from ``front``'s default."""
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    return dataclasses.field(default=default(cls, name, front), metadata=field.metadata)


def defaults(cls: type, front: str | None = None) -> dict[str, Any]:
    """Every option's default (``front``'s where it has one)."""
    return {name: default(cls, name, front) for name in options(cls)}


def check(obj: Any, rules: Iterable[Rule] = ()) -> None:
    """ConfigError with the option's text for the first value that fails its checks, then
    for the first rule that does not hold."""
    for name, found in options(type(obj)).items():
        if not found.accepts(getattr(obj, name)):
            raise ConfigError(found.error or f"{name.replace('_', ' ')} is not valid: "
                                                f"{getattr(obj, name)!r}")
    for rule in rules:
        if not rule.holds(obj):
            raise ConfigError(rule.error)


@functools.cache
def types(cls: type) -> dict[str, Any]:
    """Each option's declared type (resolved annotations; do not change the dict)."""
    hints = typing.get_type_hints(cls)
    return {name: hints[name] for name in options(cls)}


# ----------------------------------------------------------------- the command line
def help_text(cls: type, name: str, command: str) -> str:
    """The help of ``name`` on ``command``, its default filled in (argparse-escaped)."""
    found = options(cls)[name]
    text = found.help_for.get(command, found.help)
    return text.replace("{default}", str(default(cls, name, command))).replace("%", "%%")


def add_arguments(parser: argparse.ArgumentParser, cls: type, command: str,
                  names: Iterable[str] | None = None) -> None:
    """Add ``command``'s flags of ``cls``'s options (only ``names`` when given), in order."""
    chosen = options(cls)
    for name in (names if names is not None else list(chosen)):
        found = chosen[name]
        if found.flag is not None and command in found.commands:
            flags = [found.short, found.flag] if found.short else [found.flag]
            parser.add_argument(*flags, **argument(cls, name, command))


def argument(cls: type, name: str, command: str) -> dict[str, Any]:
    """``add_argument``'s keywords for ``cls.name`` on ``command``."""
    found, value = options(cls)[name], default(cls, name, command)
    kind = types(cls)[name]
    words: dict[str, Any] = {"help": help_text(cls, name, command)}
    if found.positional:
        shown = {"metavar": found.metavar} if found.metavar else {}
        if found.repeat:
            return {**words, **shown, "nargs": "+"}
        if found.required:
            return {**words, **shown}
        return {**words, **shown, "nargs": "?", "default": value or None}
    words["dest"] = name
    if found.counts:
        return {**words, "action": "count", "default": value}
    if kind is bool:
        negative = bool(found.flag and found.flag.startswith("--no-"))
        return {**words, "action": "store_false" if negative else "store_true",
                "default": value}
    words["type"] = _scalar(kind)
    listed = found.allowed() and not found.editable  # argparse refuses anything else
    if found.metavar or not listed:  # argparse's own is the dest's: the flag's
        words["metavar"] = found.metavar or (found.flag or name).lstrip("-").replace(
            "-", "_").upper()
    if found.repeat:
        return {**words, "action": "append", "default": None}
    words["default"] = None if found.auto is not None else value
    if listed:
        words["choices"] = found.allowed()
    return words


def valued_flags(cls: type, command: str) -> set[str]:
    """The flags of ``cls`` on ``command`` that take a value (not switches, not positional)."""
    kinds = types(cls)
    return {found.flag for name, found in options(cls).items()
            if found.flag and command in found.commands and not found.positional
            and kinds[name] is not bool}


def _scalar(kind: Any) -> Callable[[str], Any]:
    """What argparse converts a flag's text with: int, float or str."""
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    base = args[0] if args else kind
    if typing.get_origin(base) in (tuple, list):
        base = typing.get_args(base)[0]
    return base if base in (int, float) else str


def from_args(cls: type, args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The values of ``cls``'s options on ``command``: each flag given, else its computed
    value (``auto``), else the command's default; options not on ``command`` are left out."""
    chosen = {name: found for name, found in options(cls).items()
              if found.flag is not None and command in found.commands}
    values = {name: _plain(getattr(args, name)) for name in chosen}
    for name, found in chosen.items():
        if values[name] is None and found.auto is not None:
            values[name] = found.auto(values, default(cls, name, command))
        elif values[name] is None:
            values[name] = default(cls, name, command)
    return values


def _plain(value: Any) -> Any:
    """A repeated flag's list as a tuple (frozen dataclasses hold tuples)."""
    return tuple(value) if isinstance(value, list) else value


# ----------------------------------------------------------------- the settings file
def saved(obj: Any) -> dict[str, Any]:
    """The values of ``obj`` the settings file keeps."""
    return {name: getattr(obj, name) for name, found in options(type(obj)).items()
            if found.saved}


def restore(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """The saved values in ``data`` that still fit their option (type and checks): a value
    of the wrong type, out of range or of an unknown choice is left out (its default wins).
    An int is a float; a bool is not a number."""
    import msgspec  # only the app reads settings: the command line need not load it

    kinds = types(cls)
    values: dict[str, Any] = {}
    for name, found in options(cls).items():
        if not found.saved or name not in data:
            continue
        try:
            value = msgspec.convert(data[name], kinds[name])
        except msgspec.ValidationError:
            continue
        try:
            if found.accepts(value):
                values[name] = value
        except ConfigError:  # a check that says why: a saved value that no longer fits
            continue
    return values
