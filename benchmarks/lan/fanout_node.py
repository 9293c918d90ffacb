"""One machine of the fan-out benchmark on the shaped LAN: the hub, or a worker.

    python fanout_node.py hub MODE PORT WORKERS SIZE VERSIONS     (prints JSON timings)
    python fanout_node.py worker MODE HUB_ADDRESS PORT SERVER_KEY

MODE is "reqrep" (each worker's long-poll answered with one shared payload, as ComputeShare
does) or "pubsub" (one CURVE PUB send per version). Every worker acknowledges each version
on a request socket (reqrep: its next pull is the acknowledgement), so the hub times each
version from its first send to the last worker holding it.
"""

from __future__ import annotations

import json
import sys
import time

import zmq

from computeshare_desktop.transport.curve import curve_client, curve_server


def hub(mode: str, port: int, workers: int, size: int, versions: int) -> None:
    ctx = zmq.Context()
    public, secret = zmq.curve_keypair()
    router = curve_server(ctx, zmq.ROUTER, secret)
    router.bind(f"tcp://0.0.0.0:{port}")
    pub = curve_server(ctx, zmq.PUB, secret)
    pub.bind(f"tcp://0.0.0.0:{port + 1}")
    print(json.dumps({"key": public.decode()}), flush=True)
    payload = bytes(size)
    if mode == "pubsub":  # the slow-joiner problem: probe until every worker heard one
        hellos: set[bytes] = set()
        while len(hellos) < workers:
            pub.send(b"probe")
            while router.poll(50):
                hellos.add(router.recv_multipart()[0])
        for peer in hellos:
            router.send_multipart([peer, b"", b"go"])
    peers = [router.recv_multipart()[0] for _ in range(workers)]  # the first pulls
    times = []
    for _ in range(versions):
        began = time.perf_counter()
        if mode == "reqrep":
            for peer in peers:
                router.send_multipart([peer, b"", payload], copy=False)
        else:
            pub.send(payload, copy=False)
            for peer in peers:
                router.send_multipart([peer, b"", b"ok"])
        peers = [router.recv_multipart()[0] for _ in range(workers)]  # acknowledgements
        times.append(time.perf_counter() - began)
    for peer in peers:
        router.send_multipart([peer, b"", b"done"])
    print(json.dumps({"times": times}), flush=True)
    time.sleep(0.5)
    ctx.destroy(0)


def worker(mode: str, address: str, port: int, server_key: str) -> None:
    ctx = zmq.Context()
    req = curve_client(ctx, zmq.REQ, server_key)
    req.connect(f"tcp://{address}:{port}")
    if mode == "pubsub":
        sub = curve_client(ctx, zmq.SUB, server_key)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(f"tcp://{address}:{port + 1}")
        while sub.recv() != b"probe":
            pass
        req.send(b"hello")
        req.recv()  # "go" once everyone is subscribed
    while True:
        req.send(b"pull")
        reply = req.recv(copy=False)
        if bytes(reply.buffer[:4]) == b"done":
            break
        if mode == "pubsub":
            while len(sub.recv(copy=False)) < 16:  # skip stray probes
                pass
    ctx.destroy(0)


if __name__ == "__main__":
    role, mode = sys.argv[1], sys.argv[2]
    if role == "hub":
        hub(mode, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    else:
        worker(mode, sys.argv[3], int(sys.argv[4]), sys.argv[5])
