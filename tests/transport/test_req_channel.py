"""Request channels on a context of their caller's (the soak's swarm shares one): closing
a channel leaves that context, and the other channels on it, working."""

from __future__ import annotations

import threading

import zmq

from computeshare_desktop.transport import Identity, ReqChannel
from computeshare_desktop.transport.curve import curve_server


def echo(router: zmq.Socket, stop: threading.Event) -> None:
    while not stop.is_set():
        if router.poll(50):
            peer, empty, body = router.recv_multipart()
            router.send_multipart([peer, empty, body])


def test_closing_a_channel_leaves_a_shared_context_to_its_owner():
    hub = Identity.generate()
    ctx = zmq.Context()
    router = curve_server(ctx, zmq.ROUTER, hub.secret)
    address = f"tcp://127.0.0.1:{router.bind_to_random_port('tcp://127.0.0.1')}"
    stop = threading.Event()
    thread = threading.Thread(target=echo, args=(router, stop))
    thread.start()
    try:
        first, second = (ReqChannel(address, server_key=hub.public, identity=Identity.generate(),
                                    ctx=ctx) for _ in range(2))
        assert first.request([b"one"], timeout_s=5.0) == [b"one"]
        first.close()
        assert not ctx.closed
        assert second.request([b"two"], timeout_s=5.0) == [b"two"]
        second.close()
    finally:
        stop.set()
        thread.join(5)
        router.close(0)
        ctx.term()


def test_a_channel_of_its_own_terminates_its_context():
    channel = ReqChannel("tcp://127.0.0.1:9")
    channel.close()
    assert channel.ctx.closed
