"""The benchmark's virtual LAN: the test suite's ``VirtualLan`` (tests/netlab.py), whose
links are shaped with htb in both directions, plus the link rates the benchmark uses."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from netlab import VirtualLan, netns_available  # noqa: E402

LINKS: dict[str, str | None] = {"unshaped": None, "1gbit": "1gbit", "100mbit": "100mbit",
                                "20mbit": "20mbit"}


class ShapedLan(VirtualLan):
    """``VirtualLan`` shaped by link name, with the LAN's total traffic."""

    def shape_link(self, link: str) -> None:
        """Every machine's link at ``link`` (a key of LINKS)."""
        self.shape(LINKS[link])

    def all_tx_bytes(self) -> int:
        """Bytes sent by every machine: each byte on the LAN counted once."""
        return sum(self.tx_bytes(h) for h in self.hosts)


__all__ = ["LINKS", "ShapedLan", "netns_available"]
