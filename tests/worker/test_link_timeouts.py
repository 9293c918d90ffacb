"""Timeouts that follow the bytes: the meter's arithmetic, and a real slow reply on loopback
that is waited for (never sent twice) while the hub is known to be alive."""

from __future__ import annotations

import threading
import time

import pytest
import zmq

from computeshare_desktop.transport.zmq_client import ChannelTimeout, ReqChannel
from computeshare_desktop.worker.link import ASSUMED_RATE, SAFETY, LinkMeter
from computeshare_desktop.worker.liveness import EXTENSIONS, Liveness, Patience
from computeshare_desktop.worker.options import WorkerOptions


def test_timeouts_grow_with_bytes_and_sharing() -> None:
    meter = LinkMeter(5.0, sharing=2)
    assert meter.rate == 0.0
    assert meter.timeout_s(0) == 5.0
    assert meter.timeout_s(1_000_000, wait_s=2.0) == pytest.approx(
        5.0 + 2.0 + SAFETY * 2 * 1_000_000 / ASSUMED_RATE)
    meter.observe(10_000_000, 1.0)  # 10 MB/s measured
    assert meter.rate == 10_000_000
    # a 45 MB push (ResNet-18, float32) shared by two workers: 5 + 3 * 2 * 4.5 s
    assert meter.timeout_s(45_000_000) == pytest.approx(5.0 + 27.0)


def test_small_transfers_do_not_count_and_the_worst_rate_rules() -> None:
    meter = LinkMeter(1.0)
    meter.observe(1_000, 0.0001)  # latency, not bandwidth
    assert meter.rate == 0.0
    for rate in (12e6, 11e6, 2e6):  # one slow transfer: a busy moment
        meter.observe(int(rate), 1.0)
    assert meter.rate == 11e6
    assert meter.timeout_s(2_000_000) == pytest.approx(1.0 + SAFETY * 1.0)


class SlowServer:
    """A ROUTER that answers each request after ``delay_s`` and counts what it received."""

    def __init__(self, delay_s: float) -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.delay_s, self.received = delay_s, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            if self.sock.poll(50):
                frames = self.sock.recv_multipart()
                self.received += 1
                if self.stop.wait(self.delay_s):
                    return
                self.sock.send_multipart([*frames[:2], b"reply"])

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close(0)
        self.ctx.term()


@pytest.fixture
def slow_server():
    server = SlowServer(delay_s=1.5)
    yield server
    server.close()


def test_a_slow_reply_is_waited_for_while_the_hub_is_alive(slow_server: SlowServer) -> None:
    channel = ReqChannel(f"tcp://127.0.0.1:{slow_server.port}")
    try:
        started = time.monotonic()
        reply = channel.request([b"big push"], timeout_s=0.5, keep_waiting=lambda: True)
        assert reply == [b"reply"] and 1.4 < time.monotonic() - started < 3.0
        assert slow_server.received == 1  # sent once, not again after 0.5 s
    finally:
        channel.close()


def test_without_signs_of_life_the_request_times_out(slow_server: SlowServer) -> None:
    channel = ReqChannel(f"tcp://127.0.0.1:{slow_server.port}")
    try:
        started = time.monotonic()
        with pytest.raises(ChannelTimeout):
            channel.request([b"push"], timeout_s=0.3, keep_waiting=lambda: False)
        assert time.monotonic() - started < 1.0
        asked = []
        with pytest.raises(ChannelTimeout):  # alive, but not forever: the policy says when
            channel.request([b"push"], timeout_s=0.2,
                            keep_waiting=lambda: asked.append(1) or len(asked) <= 2)
        assert len(asked) == 3 and time.monotonic() - started < 1.0 + 0.2 * 3 + 0.5
    finally:
        channel.close()


def test_patience_waits_again_while_the_hub_is_alive_a_few_times_at_most() -> None:
    watch = Liveness(WorkerOptions(pin="", name="w", heartbeat_s=1.0))
    assert not Patience(watch).more(10.0)  # never heard: no reason to wait longer
    watch.heard(10.0)
    patience = Patience(watch)
    assert [patience.more(10.5) for _ in range(EXTENSIONS + 1)] == [True] * EXTENSIONS + [False]
    assert not Patience(watch).more(10.0 + 3 * 1.0 + 2)  # the heartbeat went quiet
