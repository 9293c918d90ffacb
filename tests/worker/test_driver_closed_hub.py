"""A worker that is not in the session (waiting for a shard, coming back after a stop, paused)
ends as soon as the hub that answered it has closed its port, saying so, instead of retrying
until give_up_s; a joined worker, or a hub whose port still accepts,
is retried as before. Fake clock, in-process hub; the closed and open ports are real."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from helpers.hub import HUB_KEY, make_hub
from worker_sim import driver

from computeshare_desktop.errors import HubUnreachableError
from computeshare_desktop.events import HubSilent, PairedWith
from computeshare_desktop.worker.driver import CLOSED


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def silent_once_paired(port: int, **options: Any) -> tuple[Any, list[Any]]:
    """A driver that pairs, then meets silence on the session's channel; its connector
    says the hub listens at 127.0.0.1:``port``."""
    d, connector, events = driver(make_hub(workers=1), request_timeout_s=2.0, **options)
    connector.host, connector.port = "127.0.0.1", port
    connector.script[HUB_KEY] = [TimeoutError] * 100
    return d, events


def test_a_worker_not_in_the_session_ends_when_the_hub_has_closed() -> None:
    d, events = silent_once_paired(closed_port(), give_up_s=120.0)
    with pytest.raises(HubUnreachableError, match="the hub has closed"):
        d.run()
    assert CLOSED.startswith("the hub has closed")
    assert any(isinstance(e, PairedWith) for e in events)
    assert not [e for e in events if isinstance(e, HubSilent)]  # no retry: it said why
    assert d.clock() - d.watch.last_answer < 5.0  # at the first silence, not after 120 s


def test_a_hub_whose_port_still_accepts_is_retried_until_give_up() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        d, events = silent_once_paired(listening.getsockname()[1], give_up_s=20.0)
        with pytest.raises(HubUnreachableError, match="silent for 20 s"):
            d.run()
    assert [e for e in events if isinstance(e, HubSilent)]
