"""Ports for hubs that tests and benchmarks start as processes."""

from __future__ import annotations

import random
import socket

# Below every system's ephemeral range (Linux 32768-60999, macOS and Windows 49152-65535): a
# port the kernel hands out for outgoing connections could be taken by any client between
# the check here and the hub's bind ("address in use"; seen once in a full test run).
TEST_PORTS = range(20000, 32000)


def free_ports() -> int:
    """A port P such that P, P+1 and P+2 (a hub's request, event and pairing ports) are free
    on 127.0.0.1 right now."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(TEST_PORTS.start, TEST_PORTS.stop - 2)
        try:
            for extra in (0, 1, 2):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + extra))
        except OSError:
            continue
        return port
    raise RuntimeError("no three free consecutive ports")
