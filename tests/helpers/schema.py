"""Values for the schema's round trips: for any option, one that is not its default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from computeshare_desktop import schema


def other_value(cls: type, name: str, command: str, tmp_path: Path) -> Any:
    """A value of ``cls.name`` that is not its default on ``command``, valid everywhere."""
    option, kind = schema.spec(cls, name), schema.types(cls)[name]
    core = schema.default(cls, name)
    value = schema.default(cls, name, command)
    value = core if value is None else value  # None: "the preset's"
    if option.allowed():
        return next(c for c in option.allowed() if c not in (value, core))
    if kind is bool:
        return not value
    if kind is int:
        return value + 1 if option.le is None or value + 1 <= option.le else value - 1
    if kind is float:
        step = 10.0 ** -(option.decimals or 3)
        candidate = round(core * 2 if core else step * 10, 6)
        return candidate if option.accepts(candidate) else round(core / 2, 6)
    return str(tmp_path / "run") if name == "out_dir" else "lab-2468"


def flag_argv(cls: type, name: str, value: Any) -> list[str]:
    option = schema.spec(cls, name)
    if isinstance(value, bool):
        return [option.flag or ""]
    return [str(value)] if option.positional else [option.flag or "", str(value)]
