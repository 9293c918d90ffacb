"""A virtual LAN of network namespaces whose links are shaped with htb.

Builds on the test suite's ``VirtualLan`` (tests/netlab.py): one namespace per machine,
joined by veth pairs to a bridge. Each machine's link is shaped in both directions (its own
veth end for uploads, the bridge's end for downloads), as a full-duplex Ethernet or Wi-Fi
link of that rate would be; ``netem`` and ``tbf`` are not in this kernel, ``htb`` is.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from netlab import INTERFACE, VirtualLan, netns_available  # noqa: E402

LINKS: dict[str, str | None] = {"unshaped": None, "1gbit": "1gbit", "100mbit": "100mbit",
                                "20mbit": "20mbit"}
LINK_BPS = {"1gbit": 1e9, "100mbit": 100e6, "20mbit": 20e6}


def _tc(*args: str, check: bool = True) -> None:
    proc = subprocess.run(["tc", *args], capture_output=True, text=True, timeout=10)
    if check and proc.returncode != 0:
        raise RuntimeError(f"tc {' '.join(args)}: {proc.stderr.strip()}")


class ShapedLan(VirtualLan):
    """``VirtualLan`` plus link shaping and per-machine byte counters."""

    def links(self, host: str) -> list[tuple[str, str]]:
        """(namespace, device) of both ends of a machine's link."""
        h = self.hosts[host]
        return [(h.namespace, INTERFACE), (self.switch_namespace, h.port)]

    def shape(self, link: str) -> None:
        """Every machine's link at ``link`` (a key of LINKS), both directions."""
        rate = LINKS[link]
        for host in self.hosts:
            for ns, dev in self.links(host):
                _tc("-n", ns, "qdisc", "del", "dev", dev, "root", check=False)
                if rate is None:
                    continue
                _tc("-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
                    "default", "10", "r2q", "100")
                _tc("-n", ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:10",
                    "htb", "rate", rate, "ceil", rate)

    def tx_bytes(self, host: str) -> int:
        """Bytes the machine has sent on its link (IP headers and all)."""
        out = subprocess.run(
            [*self.command(host, ["cat", f"/sys/class/net/{INTERFACE}/statistics/tx_bytes"])],
            capture_output=True, text=True, timeout=10, check=True).stdout
        return int(out.strip())

    def all_tx_bytes(self) -> int:
        """Bytes sent by every machine: each byte on the LAN counted once."""
        return sum(self.tx_bytes(h) for h in self.hosts)


__all__ = ["INTERFACE", "LINKS", "LINK_BPS", "ShapedLan", "netns_available"]
