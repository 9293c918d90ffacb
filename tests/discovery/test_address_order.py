"""A hub advertises every address it has (LAN, docker, VPN...): join tries them all, the
most likely first."""

from __future__ import annotations

import ipaddress
import socket

from computeshare_desktop.discovery.browser import rank_addresses
from computeshare_desktop.transport import first_reachable


def test_addresses_on_this_machines_networks_come_first():
    mine = [ipaddress.IPv4Network("192.168.1.0/24")]
    advertised = ["127.0.0.1", "172.17.0.1", "169.254.3.4", "10.8.0.2", "192.168.1.20"]
    assert rank_addresses(advertised, mine) == (
        "192.168.1.20", "10.8.0.2", "172.17.0.1", "169.254.3.4", "127.0.0.1")
    assert rank_addresses(["172.17.0.1", "10.8.0.2"], []) == ("10.8.0.2", "172.17.0.1")


def test_join_takes_the_first_address_that_answers():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        # 127.0.0.2 has nothing on that port (refused at once); 127.0.0.1 answers
        assert first_reachable(["127.0.0.2", "127.0.0.1"], port) == "127.0.0.1"
        assert first_reachable(["127.0.0.1", "127.0.0.2"], port) == "127.0.0.1"
    assert first_reachable(["127.0.0.3"], port) == "127.0.0.3"  # none: the first, to report
