"""Fan-out of a new model version to N workers: the hub's request/reply with one shared
encoded payload (what ComputeShare does) against a CURVE PUB/SUB broadcast of the same bytes.

Both run on loopback with CURVE, as the real sockets do. For each payload size and number of
workers it measures, over repeated versions: the time from the hub starting to send until
the last worker holds the payload, and the hub thread's CPU time for it. The encoding is
done once per version in both (that is what the shared payload buys over per-worker
encoding); what differs is how the bytes leave.

    python benchmarks/bench_fanout.py [--versions 20] [--out docs/BENCHMARKS-FANOUT.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import zmq

SIZES = {"simplenet zstd delta (52 kB)": 52_000, "ResNet-18 top-k 2% delta (1.8 MB)": 1_800_000,
         "ResNet-18 int8 delta (11.5 MB)": 11_500_000}
WORKERS = (2, 4, 8)


def keypair() -> tuple[bytes, bytes]:
    return zmq.curve_keypair()


def server_socket(ctx: zmq.Context, kind: int, secret: bytes) -> zmq.Socket:
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.curve_server = True
    sock.curve_secretkey = secret
    return sock


def client_socket(ctx: zmq.Context, kind: int, server_public: bytes) -> zmq.Socket:
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    public, secret = keypair()
    sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = server_public, public, secret
    return sock


def run_reqrep(n: int, size: int, versions: int) -> tuple[list[float], list[float]]:
    """Workers park a request (a long-poll); the hub answers all of them with one payload."""
    ctx = zmq.Context()
    public, secret = keypair()
    router = server_socket(ctx, zmq.ROUTER, secret)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    got = threading.Barrier(n + 1)
    stop = threading.Event()

    def worker() -> None:
        req = client_socket(ctx, zmq.REQ, public)
        req.connect(f"tcp://127.0.0.1:{port}")
        try:
            for _ in range(versions):
                req.send(b"pull")
                while not req.poll(100):
                    if stop.is_set():
                        return
                req.recv(copy=False)
                got.wait()
        finally:
            req.close(0)

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    payload = bytes(size)
    wall, cpu = [], []
    try:
        for _ in range(versions):
            peers = [router.recv_multipart()[0] for _ in range(n)]  # every pull is parked
            began, began_cpu = time.perf_counter(), time.thread_time()
            for peer in peers:  # one shared payload, sent without copying
                router.send_multipart([peer, b"", payload], copy=False)
            cpu.append(time.thread_time() - began_cpu)
            got.wait()
            wall.append(time.perf_counter() - began)
    finally:
        stop.set()
        for t in threads:
            t.join()
        router.close(0)
        ctx.term()
    return wall, cpu


def run_pubsub(n: int, size: int, versions: int) -> tuple[list[float], list[float]]:
    """Workers subscribe; the hub publishes each version once."""
    ctx = zmq.Context()
    public, secret = keypair()
    pub = server_socket(ctx, zmq.PUB, secret)
    pub.setsockopt(zmq.SNDHWM, 4)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    ready = threading.Barrier(n + 1)
    got = threading.Barrier(n + 1)

    def worker() -> None:
        sub = client_socket(ctx, zmq.SUB, public)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(f"tcp://127.0.0.1:{port}")
        try:
            while True:  # the slow-joiner problem: wait until a probe arrives
                if sub.poll(50) and sub.recv() == b"probe":
                    break
            ready.wait()
            for _ in range(versions):
                while True:
                    frame = sub.recv(copy=False)
                    if len(frame) == size:
                        break
                got.wait()
        finally:
            sub.close(0)

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    while ready.n_waiting < n:
        pub.send(b"probe")
        time.sleep(0.05)
    ready.wait()
    payload = bytes(size)
    wall, cpu = [], []
    try:
        for _ in range(versions):
            began, began_cpu = time.perf_counter(), time.thread_time()
            pub.send(payload, copy=False)
            cpu.append(time.thread_time() - began_cpu)
            got.wait()
            wall.append(time.perf_counter() - began)
    finally:
        for t in threads:
            t.join()
        pub.close(0)
        ctx.term()
    return wall, cpu


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--versions", type=int, default=20)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    rows = ["| payload | workers | request/reply ms (median) | PUB/SUB ms (median) | "
            "request/reply hub CPU ms | PUB/SUB hub CPU ms |", "|---|---|---|---|---|---|"]
    for name, size in SIZES.items():
        for n in WORKERS:
            results = {}
            for kind, fn in (("reqrep", run_reqrep), ("pubsub", run_pubsub)):
                wall, cpu = fn(n, size, args.versions)
                results[kind] = (statistics.median(wall[1:]), statistics.median(cpu[1:]))
            (rw, rc), (pw, pc) = results["reqrep"], results["pubsub"]
            rows.append(f"| {name} | {n} | {1000 * rw:.2f} | {1000 * pw:.2f} | "
                        f"{1000 * rc:.3f} | {1000 * pc:.3f} |")
            print(rows[-1], flush=True)
    table = "\n".join(rows) + "\n"
    if args.out:
        args.out.write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
