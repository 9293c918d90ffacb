"""An unpaired peer hammering a hub (run as a process by tests/e2e/test_flood.py; the
transport's pairing-flood test sends its PAIR_STARTs too).

usage: python -m testbed.flooder HOST PORT SECONDS RATE COUNTS_FILE [SOURCE]   (from the root)

Every 1/RATE s it sends one of: a PAIR_START (a real worker's first pairing request, made
by the worker core for a random PIN), garbage frames, or an oversized frame to the pairing
port, and every tenth time a CURVE connection attempt with a random key to the request
port. Keeps COUNTS_FILE (JSON) current. SOURCE: the local address its connections come
from (another machine on the LAN).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time

import zmq

from computeshare_desktop.protocol.ports import HubPorts
from computeshare_desktop.protocol.wire import Frame
from computeshare_desktop.transport.curve import curve_client
from computeshare_desktop.worker import WorkerCore, WorkerOptions
from computeshare_desktop.worker.effects import Send

STARTS = 16  # PAIR_STARTs made ahead (a SPAKE2 run costs ~4 ms), sent in turn


def pair_starts(count: int) -> list[list[Frame]]:
    """The frames of ``count`` PAIR_STARTs as a worker core sends them first, each a fresh
    SPAKE2 run for a random PIN."""
    out = []
    for _ in range(count):
        options = WorkerOptions(pin=f"{secrets.randbelow(10**6):06d}", name="x")
        core = WorkerCore(options, device="flood", worker_key=zmq.curve_keypair()[0].decode())
        first = core.start(time.monotonic())[-1]
        assert isinstance(first, Send) and first.hub_key is None  # the pairing channel
        out.append(first.frames)
    return out


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    seconds, rate, counts_file = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    via = f"{sys.argv[6]}:0;" if len(sys.argv) > 6 else ""
    ctx = zmq.Context()
    pairing = ctx.socket(zmq.DEALER)
    pairing.setsockopt(zmq.LINGER, 0)
    pairing.setsockopt(zmq.SNDHWM, 100)
    ports = HubPorts.at(port)
    pairing.connect(f"tcp://{via}{host}:{ports.pairing}")
    dropper = ctx.socket(zmq.DEALER)  # oversized frames make the hub drop this connection
    dropper.setsockopt(zmq.LINGER, 0)
    dropper.setsockopt(zmq.SNDHWM, 100)
    dropper.connect(f"tcp://{via}{host}:{ports.pairing}")
    starts = pair_starts(STARTS)
    counts = {"pair_start": 0, "garbage": 0, "oversized": 0, "curve": 0, "replies": 0}
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        kind = ("pair_start", "garbage", "oversized")[i % 3]
        frames = ([b"", *starts[i // 3 % STARTS]] if kind == "pair_start"
                  else [b"", os.urandom(64), os.urandom(16)] if kind == "garbage"
                  else [b"", os.urandom(8192)])
        try:
            (dropper if kind == "oversized" else pairing).send_multipart(frames, zmq.NOBLOCK)
            counts[kind] += 1
        except zmq.Again:
            pass
        while pairing.poll(0):
            pairing.recv_multipart()
            counts["replies"] += 1
        if i % 10 == 0:
            sock = curve_client(ctx, zmq.DEALER, zmq.curve_keypair()[0])  # a stranger's keys
            sock.connect(f"tcp://{via}{host}:{ports.request}")
            sock.send(b"let me in", zmq.NOBLOCK)
            sock.close(0)
            counts["curve"] += 1
        i += 1
        if i % 50 == 0:
            with open(counts_file + ".tmp", "w", encoding="utf-8") as fh:
                json.dump(counts, fh)
            os.replace(counts_file + ".tmp", counts_file)
        time.sleep(1 / rate)
    pairing.close(0)
    dropper.close(0)
    ctx.term()


if __name__ == "__main__":
    main()
