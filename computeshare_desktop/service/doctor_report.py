"""The network check's report: items that passed or failed, each failure with its likely
cause and its fix; as text for people and as JSON. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping


class Status(str, Enum):
    """How one check went."""

    OK = "ok"  # passed
    WARN = "warn"  # passed, with something worth knowing (the exit code stays 0)
    FAIL = "fail"  # failed: the cause and the fix say what to do
    SKIP = "skip"  # not run (nothing to check it against)


EXIT_OK, EXIT_FAILED = 0, 1  # computeshare doctor's exit codes (argparse's usage error is 2)
EXIT_CODES_TEXT = ("exit codes:\n  0  every check passed (warnings included)\n"
                   "  1  a check failed (its FAIL line says the likely cause and the fix)\n"
                   "  2  bad arguments")


@dataclass(frozen=True, slots=True)
class Item:
    """One line of the report."""

    key: str  # stable, for JSON: interfaces, mdns_self, mdns_sessions, ports, hub, link, preset
    title: str
    status: Status
    detail: str  # what was seen
    cause: str = ""  # the likely cause (a warning or a failure)
    fix: str = ""  # what to do about it
    facts: Mapping[str, Any] = field(default_factory=dict)  # numbers, for --json

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "status": self.status.value,
                "detail": self.detail, "cause": self.cause, "fix": self.fix,
                "facts": dict(self.facts)}


@dataclass(frozen=True, slots=True)
class Report:
    """Every check's item, in the order they are shown."""

    items: tuple[Item, ...]

    @property
    def ok(self) -> bool:
        """True when no check failed (warnings are fine)."""
        return all(item.status is not Status.FAIL for item in self.items)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.ok else EXIT_FAILED

    def item(self, key: str) -> Item | None:
        """The item of ``key``, if that check ran."""
        return next((i for i in self.items if i.key == key), None)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "items": [item.to_json() for item in self.items]}

    def text(self) -> str:
        """One line per item; a failure or a warning adds its cause and its fix."""
        lines = []
        for item in self.items:
            lines.append(f"{item.status.value.upper():<5}{item.title}: {item.detail}")
            if item.cause:
                lines.append(f"     cause: {item.cause}")
            if item.fix:
                lines.append(f"     fix: {item.fix}")
        lines.append(self.summary() + ".")
        return "\n".join(lines)

    def summary(self) -> str:
        """The verdict in words, warnings counted: ``All checks passed``, ``All checks passed,
        1 warning``, ``2 checks failed, 1 warning`` (the text's last line and the dialog's
        headline)."""
        failed = sum(i.status is Status.FAIL for i in self.items)
        warned = sum(i.status is Status.WARN for i in self.items)
        verdict = (f"{failed} check{'s' if failed > 1 else ''} failed" if failed
                   else "All checks passed")
        return verdict + (f", {warned} warning{'s' if warned > 1 else ''}" if warned else "")


def mbit(bytes_per_s: float) -> str:
    """A rate as people read it: ``940 Mbit/s``, ``12.5 Mbit/s``, ``1.2 Gbit/s``."""
    bits = bytes_per_s * 8
    if bits >= 1e9:
        return f"{bits / 1e9:.1f} Gbit/s"
    return f"{bits / 1e6:.0f} Mbit/s" if bits >= 1e8 else f"{bits / 1e6:.1f} Mbit/s"
