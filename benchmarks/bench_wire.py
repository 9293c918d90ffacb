"""Wire benchmark: encode/decode time of one message header, and of one hub event.

Times what a typed message costs in pure Python on this machine: ``protocol.encode`` and
``protocol.decode`` of a small PULL, a MODEL header, a PUSH and a REJECT (each with its
binary frames, which are only counted, never copied), and ``to_wire``/``from_wire`` of a
RoundClosed event describing 8 workers (the JSON text step of the event socket is left
out: the transport does it the same way before and after). It uses nothing but those
functions and the message constructors, so it runs unchanged against any version of the
protocol code.

Each figure is the median (and 90th percentile) over ``--reps`` batches of ``--number``
calls, per call. ``--save F`` writes the samples as JSON; ``--against F`` prints them side
by side with this run (before = F, after = now; speed-up = before / after)::

    python benchmarks/bench_wire.py --save /tmp/wire_before.json      # on the old code
    python benchmarks/bench_wire.py --against /tmp/wire_before.json   # on the new code
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from computeshare_desktop.events import RoundClosed, WorkerInfo, from_wire
from computeshare_desktop.protocol import decode, encode
from computeshare_desktop.protocol.messages import Model, Pull, Push, Reject

HEX32 = "0123456789abcdef" * 2
PAYLOAD = bytes(21840 * 4)  # a simplenet-sized float32 vector; decode only checks its size


def message_cases() -> dict[str, tuple[Any, list[bytes]]]:
    """The messages timed, each with the binary frames that follow its header."""
    return {
        "PULL": (Pull(token=HEX32, after=41, wait_ms=2000, fingerprint="f" * 16), []),
        "MODEL": (Model(version=42, codec="zstd", numel=21840, base=41, check="1f2e3d4c",
                        start=1312, batch=32, steps=0, lr=0.02, momentum=0.0,
                        push_codec="int8", topk=0.01), [PAYLOAD, b""]),
        "PUSH": (Push(token=HEX32, version=41, codec="int8", numel=21840, loss=2.302585,
                      samples=32, steps=0, compute_ms=12.5, bandwidth=1.25e7), [PAYLOAD, b""]),
        "REJECT": (Reject(code="STALE", detail="current version is 42", version=42,
                          retry_after=0.0), []),
    }


def round_closed(workers: int = 8) -> RoundClosed:
    """A synchronous round's event as the hub publishes it, describing ``workers`` workers."""
    infos = tuple(WorkerInfo(id=i, name=f"machine-{i}", device="cuda:0 (NVIDIA H200)",
                             shard=i, pushed=400 + i, rejected=i % 3, samples=12800 + i,
                             ready=True, compute_s=0.0123 * (i + 1), batch=32, busy=0.85,
                             key=f"{i:016x}") for i in range(workers))
    return RoundClosed(round=400, version=400, steps=1, loss=0.3184, contributors=workers,
                       rejected=0, bytes_in=98304, bytes_out=786432, payload_bytes=87360,
                       samples=32 * workers, seconds=0.0412, complete=True, compute_s=0.0123,
                       busy=0.85, workers=infos)


def per_call_us(fn: Callable[[], Any], number: int, reps: int) -> list[float]:
    """Microseconds per call of ``fn``, one sample per batch of ``number`` calls."""
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number * 1e6)
    return samples


def measure(number: int, reps: int) -> dict[str, dict[str, Any]]:
    """Samples per case: ``{"bytes": header size, "encode": [...], "decode": [...]}``."""
    rows: dict[str, dict[str, Any]] = {}
    for name, (msg, body) in message_cases().items():
        frames = encode(msg, body)
        assert decode(frames)[0] == msg
        rows[name] = {"bytes": len(frames[0]),
                      "encode": per_call_us(functools.partial(encode, msg, body), number, reps),
                      "decode": per_call_us(functools.partial(decode, frames), number, reps)}
    event = round_closed()
    data = json.loads(json.dumps(event.to_wire()))  # lists, as the subscriber receives it
    assert from_wire(data) == event
    rows["RoundClosed, 8 workers"] = {
        "bytes": len(json.dumps(data, separators=(",", ":"))),
        "encode": per_call_us(event.to_wire, number // 4, reps),
        "decode": per_call_us(functools.partial(from_wire, data), number // 4, reps)}
    return rows


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    msgspec = sys.modules.get("msgspec")  # loaded only when the protocol code uses it
    library = f"msgspec {msgspec.__version__}" if msgspec else "json + hand-written checks"
    return {"python": platform.python_version(), "os": platform.platform(),
            "cpu": platform.processor() or platform.machine(), "library": library}


def _median_p90(samples: list[float]) -> tuple[float, float]:
    return statistics.median(samples), statistics.quantiles(samples, n=10)[-1]


def table(rows: dict[str, dict[str, Any]]) -> str:
    """One run: median (p90) microseconds per call."""
    out = ["| message | header bytes | encode us, median (p90) | decode us, median (p90) |",
           "|---|---:|---:|---:|"]
    for name, row in rows.items():
        cells = [f"{m:.2f} ({p:.2f})" for m, p in map(_median_p90, (row["encode"],
                                                                    row["decode"]))]
        out.append(f"| {name} | {row['bytes']} | {cells[0]} | {cells[1]} |")
    return "\n".join(out)


def side_by_side(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> str:
    """Medians before and after, and the speed-up (before / after)."""
    out = ["| message | bytes before / after | encode us before | after | speed-up "
           "| decode us before | after | speed-up |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, new in after.items():
        old = before.get(name)
        if old is None:
            continue
        cells = [f"{old['bytes']} / {new['bytes']}"]
        for op in ("encode", "decode"):
            b, a = statistics.median(old[op]), statistics.median(new[op])
            cells += [f"{b:.2f}", f"{a:.2f}", f"{b / a:.2f}x"]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--number", type=int, default=4000, help="calls per batch (events: 1/4)")
    p.add_argument("--reps", type=int, default=15, help="batches per figure")
    p.add_argument("--save", type=Path, help="write this run's samples here (JSON)")
    p.add_argument("--against", type=Path, help="a saved run to compare with (the before)")
    args = p.parse_args()
    rows = measure(args.number, args.reps)
    info = machine()
    print(f"Python {info['python']}, {info['library']}, {info['os']}, {info['cpu']}; "
          f"{args.reps} batches of {args.number} calls\n")
    print(table(rows))
    if args.save:
        args.save.write_text(json.dumps({"machine": info, "rows": rows}, indent=1))
    if args.against:
        before = json.loads(args.against.read_text())
        print(f"\nbefore: {before['machine']['library']}; after: {info['library']}\n")
        print(side_by_side(before["rows"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
