"""The benchmark's virtual LAN: ``testbed.netlab.VirtualLan`` (the test suite's too), whose
links are shaped with htb in both directions, plus the link rates the benchmark uses."""

from __future__ import annotations

import subprocess
import sys

from testbed.netlab import VirtualLan, netns_available

LINKS: dict[str, str | None] = {"unshaped": None, "1gbit": "1gbit", "100mbit": "100mbit",
                                "20mbit": "20mbit"}


class ShapedLan(VirtualLan):
    """``VirtualLan`` shaped by link name, with the LAN's total traffic."""

    def shape_link(self, link: str) -> None:
        """Every machine's link at ``link`` (a key of LINKS)."""
        self.shape(LINKS[link])

    def counter(self, host: str) -> LinkCounter:
        """A cheap reader of the host's link counters, for sampling many times a second."""
        return LinkCounter(self.popen(host, [sys.executable, "-I", "-c", _COUNTER],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True))

    def all_tx_bytes(self) -> int:
        """Bytes sent by every machine: each byte on the LAN counted once."""
        return sum(self.tx_bytes(h) for h in self.hosts)


# Runs inside the host's namespace: one line in, the link's rx + tx bytes out. Reading
# /sys there costs microseconds, where an `ip` process per sample costs milliseconds of
# the very CPU the benchmark measures.
_COUNTER = r"""
import sys
base = "/sys/class/net/eth0/statistics/"
for _ in sys.stdin:
    total = sum(int(open(base + name).read()) for name in ("rx_bytes", "tx_bytes"))
    print(total, flush=True)
"""


class LinkCounter:
    """Bytes a host's link carried so far, both directions, read through a helper."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def read(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(5)


__all__ = ["LINKS", "ShapedLan", "netns_available"]
