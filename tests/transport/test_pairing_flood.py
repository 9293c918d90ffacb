"""A pairing flood over real sockets: many source addresses keep starting runs they never
finish, yet a real worker pairs within 5 s and this machine's own worker at once."""

from __future__ import annotations

import threading
import time

import pytest
import zmq

from helpers.host import hosting
from computeshare_desktop.transport import Identity, ReqChannel, ZmqConnector
from computeshare_desktop.protocol.ports import HubPorts
from computeshare_desktop.worker import WorkerOptions, WorkerSession, pick_device
from helpers.net import PIN, RunningHub
from helpers.portable import loopback_aliases_work
from testbed.flooder import pair_starts


LAN_FLOOD = [f"127.0.0.{10 + i}" for i in range(40)]


class Flood:
    """Each of ``sources`` starting a pairing run every ``every_s``, forever (by default 40
    addresses, 127.0.0.10-49, every 0.5 s); None: plain 127.0.0.1. It may connect before
    the hub listens (ZeroMQ connects once it does)."""

    def __init__(self, pair_port: int, sources: list[str | None] = LAN_FLOOD,
                 every_s: float = 0.5) -> None:
        self.ctx = zmq.Context()
        self.socks = []
        for source in sources:
            sock = self.ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(f"tcp://{source + ':0;' if source else ''}127.0.0.1:{pair_port}")
            self.socks.append(sock)
        self.every_s = every_s
        self.sent = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        start = [b"", *pair_starts(1)[0]]  # a worker core's first request
        while not self.stop.wait(self.every_s):
            for sock in self.socks:
                try:
                    sock.send_multipart(start, zmq.NOBLOCK)
                    self.sent += 1
                except zmq.Again:  # not connected (yet): the hub does not listen
                    pass
                while sock.poll(0):
                    sock.recv_multipart()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for sock in self.socks:
            sock.close(0)
        self.ctx.term()


class FromAddress(ZmqConnector):
    """A worker whose pairing connection comes from another LAN address."""

    def __init__(self, *args, source: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.source = source

    def pairing(self) -> ReqChannel:
        return ReqChannel(f"tcp://{self.source}:0;{self.host}:{self.pair_port}",
                          max_message_bytes=4096)


def pair_time(port: int, connector: ZmqConnector) -> float:
    session = WorkerSession(connector, WorkerOptions(pin=PIN, name="real"), pick_device("cpu"))
    began = time.monotonic()
    session.pair()  # the pairing phase alone
    return time.monotonic() - began


@pytest.mark.skipif(not (loopback_aliases_work("127.0.0.10")
                         and loopback_aliases_work("127.0.0.200")),
                    reason="needs 127.0.0.10-49 and 127.0.0.200 as source addresses (macOS has "
                           "only 127.0.0.1 on lo0 unless aliased)")
def test_flooded_pairing_still_pairs_real_workers_within_5_s(tmp_path):
    hub = RunningHub(tmp_path, workers=2, rounds=10)
    flood = Flood(hub.server.pair_port)
    try:
        time.sleep(3.0)  # the flood fills every slot and uses the shared rate
        assert flood.sent >= 200
        desk = hub.session.core.pairing
        assert desk.evicted > 0
        lan = FromAddress("127.0.0.1", hub.port, Identity.generate(), source="127.0.0.200")
        assert pair_time(hub.port, lan) < 5.0
        local = ZmqConnector("127.0.0.1", hub.port, Identity.generate())
        assert pair_time(hub.port, local) < 1.0
        assert len(hub.session.core.allowlist) == 2
    finally:
        flood.close()
        hub.close()


def test_sockets_an_unpaired_peer_can_reach_queue_little_per_peer(tmp_path):
    import zmq as _zmq

    from computeshare_desktop.transport.zmq_hub import (PAIRING_RCVHWM, REQUEST_RCVHWM,
                                                        SUBSCRIBER_RCVHWM)

    hub = RunningHub(tmp_path, workers=1, rounds=10)
    try:
        assert hub.server.pairing.getsockopt(_zmq.RCVHWM) == PAIRING_RCVHWM <= 8
        assert hub.server.router.getsockopt(_zmq.RCVHWM) == REQUEST_RCVHWM <= 16
        assert hub.server.pub.getsockopt(_zmq.RCVHWM) == SUBSCRIBER_RCVHWM <= 4
        assert hub.server.pairing.getsockopt(_zmq.MAXMSGSIZE) == 4096
        assert hub.server.pub.getsockopt(_zmq.MAXMSGSIZE) == 4096
        hub.server._restart_pub()  # after a kick: the same limits
        assert hub.server.pub.getsockopt(_zmq.RCVHWM) == SUBSCRIBER_RCVHWM
    finally:
        hub.close()


def test_the_hosts_own_worker_trains_whatever_floods_the_pairing_port(tmp_path, monkeypatch):
    """The host's own worker is allowed before it starts and never pairs: a process on this
    very machine that floods the pairing port from 127.0.0.1 (sharing that address's
    allowance) cannot keep it from training."""
    from computeshare_desktop.events import PairedWith, RoundClosed, WorkerJoined
    from computeshare_desktop.hub import HubConfig
    from computeshare_desktop.service.host import HostService
    from helpers.net import free_ports

    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    port = free_ports()
    # from before the hub listens
    flood = Flood(HubPorts.at(port).pairing, sources=[None], every_s=0.002)
    config = HubConfig(rounds=100_000, workers=1, batch_size=8, eval_every=0)
    service = HostService(hosting(config, tmp_path / "run", port=port, bind="127.0.0.1",
                                   advertise=False, train_here=True, pin="975310")).start()
    try:
        began = time.monotonic()
        seen = []
        while time.monotonic() - began < 10 and not any(
                isinstance(t.event, RoundClosed) for t in seen):
            service.wait(0.2)
            seen += service.drain()
        assert any(isinstance(t.event, RoundClosed) for t in seen), "the host never trained"
        assert time.monotonic() - began < 5.0
        assert any(isinstance(t.event, WorkerJoined) for t in seen)
        assert not any(isinstance(t.event, PairedWith) for t in seen)  # it never paired
        desk = service.session.core.pairing if service.session else None
        assert desk is not None and desk.evicted > 0  # the flood did reach the desk
    finally:
        flood.close()
        service.stop()
        service.join(20)
