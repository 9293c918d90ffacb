"""Sections 1-3 of the core report: round time at the hub, bytes on the wire (measured, and
computed from the protocol), and where the time outside compute goes."""

from __future__ import annotations

import statistics
from typing import Any, Sequence

from benchmarks._common import machine, median, p90, table
from computeshare_desktop.protocol.messages import Ack, Pull

from .plan import KB, NUMEL, WORKERS
from .replay import (FINGERPRINT, TOKEN, Replay, header_len, header_sizes, model_header,
                     push_header)
from .sessions import RoundStats


def ms(x: float) -> str:
    return f"{1000 * x:.2f}"


def kb(x: float) -> str:
    return f"{x / KB:,.1f}"


def machine_lines() -> list[str]:
    m = machine()
    return [f"- CPUs: {m['cpus']} (nproc {m['nproc']}), CPU model: {m['cpu']}",
            f"- Python {m['python']}, torch {m['torch']}, pyzmq {m['pyzmq']} (libzmq "
            f"{m['libzmq']}), zstandard {m['zstandard']}, computeshare-desktop "
            f"{m['computeshare']}",
            f"- OS: {m['os']}"]


def pct(a: float, b: float) -> str:
    return f"{a / b:.2f}×"


def round_section(stats: dict[str, RoundStats], warmup: int, rounds: int, reps: int) -> str:
    rows = []
    for c, s in stats.items():
        rows.append([c, s.n, ms(median(s.round_s)), ms(p90(s.round_s)), ms(median(s.compute_s)),
                     ms(p90(s.compute_s)), ms(median(s.other_s)), ms(p90(s.other_s)),
                     f"{1 / median(s.round_s):.0f}", s.rejected, s.partial])
    r, z = stats["raw"], stats["zstd"]
    rows.append(["zstd / raw", "", pct(median(z.round_s), median(r.round_s)), "",
                 pct(median(z.compute_s), median(r.compute_s)), "",
                 pct(median(z.other_s), median(r.other_s)), "", "", "", ""])
    noise = median(z.compute_s) / median(r.compute_s)
    main = table(["codec", "rounds", "round median ms", "round p90 ms", "compute median ms",
                  "compute p90 ms", "other median ms", "other p90 ms", "rounds/s",
                  "rejected", "partial rounds"], rows)
    reps_rows = [[c, rep, ms(a), ms(b), ms(o), f"{w:.1f}"] for c, s in stats.items()
                 for rep, a, b, o, w in s.per_rep]
    per_rep = table(["codec", "repetition", "round median ms", "compute median ms",
                     "other median ms", "session wall s (3 processes, start-up included)"],
                    sorted(reps_rows, key=lambda x: (x[1], x[0])))
    ckpt = {c: s.ckpt_other_s for c, s in stats.items()}
    ckpt_note = ", ".join(f"{c} {ms(median(v))} ms (n={len(v)})" for c, v in ckpt.items() if v)
    return f"""## 1. Round time at the hub

{reps} repetitions × {rounds} rounds per codec, alternated (raw, zstd / zstd, raw / ...);
the first {warmup} rounds of each session are skipped. "round" is the hub's `seconds` (previous
round's close to this close), "compute" the slowest contributing worker's `compute_s`
(weight load + forward + backward), "other" = round - compute per round: hub work (decode,
average, optimizer step, encode the new weights, metrics), ZeroMQ on loopback, worker-side
codec and protocol, and scheduling on 2 shared cores.

{main}

Worker compute is the same work under both codecs. Its zstd/raw ratio ({noise:.2f}×) is machine
noise plus contention from the codec work of the other two processes (three processes, two
cores), and bounds how finely this comparison resolves the codec's cost.

Per repetition (medians):

{per_rep}

Rounds right after a checkpoint (the hub writes checkpoint.pt every 50 rounds, not
configurable from the CLI), median "other": {ckpt_note or "none in the window"}.
"""


def computed_round_bytes(rep: Replay, codec: str, record: dict[str, Any]) -> tuple[int, int]:
    """Bytes in and out the protocol predicts for one metrics round (no heartbeats).

    Round r starts from version v = r - 1: in, both workers' PUSH of v and two PULLs (one
    after v, one after v - 1 that arrived just after the previous close); out, both MODEL
    replies of v and two ACKs. Only compute_ms in PUSH is not replayed (a timing: its
    float repr can differ by a few characters).
    """
    v, cms = record["round"] - 1, record["compute_s"] * 1000
    push = sum(header_len(push_header(v, codec, loss, cms)) + size
               for loss, size in zip(rep.worker_loss[v], rep.push[codec][v], strict=True))
    pull = header_len(Pull(TOKEN, v, 2000, FINGERPRINT)) + header_len(
        Pull(TOKEN, v - 1, 2000, FINGERPRINT))
    down = WORKERS * (header_len(model_header(v, codec)) + rep.model[codec][v])
    return push + pull, down + WORKERS * header_len(Ack(v))


def per_worker_bytes(rep: Replay, codec: str, versions: range) -> tuple[float, float, list[int]]:
    """Median bytes of one PUSH and one MODEL download (header + payload) over ``versions``."""
    pushes = [header_len(push_header(v, codec, loss, 8.123456789012345)) + size
              for v in versions
              for loss, size in zip(rep.worker_loss[v], rep.push[codec][v], strict=True)]
    downs = [header_len(model_header(v, codec)) + rep.model[codec][v] for v in versions]
    return median(pushes), median(downs), pushes


def bytes_section(stats: dict[str, RoundStats], rep: Replay,
                  versions: range) -> tuple[str, dict[str, Any]]:
    rows, check, derived = [], [], {}
    raw_grad = NUMEL * 4
    for c, s in stats.items():
        push, down, pushes = per_worker_bytes(rep, c, versions)
        computed = [computed_round_bytes(rep, c, r) for r in s.records]
        res_in = [r["bytes_in"] - ci for r, (ci, _) in zip(s.records, computed, strict=True)]
        res_out = [r["bytes_out"] - co for r, (_, co) in zip(s.records, computed, strict=True)]
        derived[c] = {"wire": median(s.wire), "push": push, "model": down}
        rows.append([c, kb(median(s.wire)), kb(p90(s.wire)), kb(median(s.bytes_in)),
                     kb(median(s.bytes_out)), f"{push:,.0f}",
                     f"{min(pushes):,}-{max(pushes):,}", f"{down:,.0f}",
                     f"{push / raw_grad:.3f}×"])
        wire_c = median([ci + co for ci, co in computed])
        check.append([c, f"{wire_c:,.0f}", f"{median(s.wire):,.0f}",
                      f"{median(res_in):+,.0f} / {median(res_out):+,.0f}",
                      f"{100 * _share(res_in, 8):.1f}% / {100 * _share(res_out, 8):.1f}%",
                      f"{statistics.fmean(res_in):+.1f} / {statistics.fmean(res_out):+.1f}",
                      f"{min(res_in):+,} … {max(res_in):+,}",
                      f"{min(res_out):+,} … {max(res_out):+,}"])
    h = header_sizes("zstd")
    z = rep.push["zstd"]
    spans = [range(lo, min(lo + 50, len(z))) for lo in range(0, len(z), 50)]
    buckets = ", ".join(f"{r.start}-{r.stop - 1}: {median([x for v in r for x in z[v]]):,.0f}"
                        for r in spans)
    loss_err = max(abs(r["loss"] - rep.loss[r["round"] - 1])
                   for s in stats.values() for r in s.records)
    text = f"""## 2. Bytes on the wire

Bytes are application frames (header frame + payload frame) as the hub counts them; ZeroMQ's
own framing (2-9 bytes per frame, plus the REQ envelope's empty delimiter) and TCP/IP headers
are not included. Reference: the raw float32 gradient of simplenet is {NUMEL:,} params × 4 =
{raw_grad:,} bytes.

Per round (2 workers) measured by the hub (metrics.jsonl), and per worker computed from the
protocol: real header frames from `protocol.encode` plus real codec payloads from an
in-process replay of the same training (the hub's `ParameterServer`/`Round` and the worker's
`GradientComputer`; training is seeded, synchronous and lossless, so the replay computes the
same model versions as every session: its losses match the metrics' to
{loss_err:.1e}). Per-worker medians are over versions {versions.start}-{versions.stop - 1}.

{table(["codec", "wire/round median kB", "wire/round p90 kB", "in median kB",
        "out median kB", "push bytes median (hdr+payload)", "push bytes range",
        "model download bytes median (hdr+payload)", "push / raw float32 gradient"], rows)}

Header frames with typical values (bytes): PULL {h['pull']}, MODEL {h['model']},
PUSH {h['push']}, ACK {h['ack']}, PING {h['ping']}, PONG {h['pong']}. The zstd gradient
payload changes as training proceeds; median bytes by model version: {buckets}.

Cross-check, round by round: computed = both PUSHes + two PULLs in, both MODEL replies + two
ACKs out (no heartbeats); residual = measured − computed. Residuals of a few bytes come from
the float repr of `compute_ms` in PUSH; ±{h['pull']} in is a PULL that arrived just after the
round closed and so counts in the next one (they cancel in pairs); +{h['ping']} in /
+{h['pong']} out is a PING/PONG heartbeat (one per worker per second). The mean residual per
round is therefore the heartbeat traffic.

{table(["codec", "computed wire/round median", "measured wire/round median",
        "median residual in / out", "rounds within ±8 B in / out",
        "mean residual per round in / out", "residual in range",
        "residual out range"], check)}
"""
    return text, derived


def _share(values: Sequence[int], tolerance: int) -> float:
    return sum(abs(v) <= tolerance for v in values) / max(1, len(values))


def overhead_section(stats: dict[str, RoundStats], rep: Replay, versions: range) -> str:
    """Hub and codec work per round, timed uncontended in-process, against the measured 'other'."""
    order = ["worker: decode weights", "worker: encode gradient", "hub: decode gradient",
             "hub: average", "hub: optimizer step", "hub: encode weights"]
    rows = []
    for c, s in stats.items():
        parts = rep.parts[c]
        med = {k: median(parts[k]) for k in order}
        # Per round the hub decodes both gradients; each worker's own codec work overlaps the
        # other worker's, so it counts once on the critical path.
        path = sum(med.values()) + med["hub: decode gradient"]
        other = median(s.other_s)
        rows.append([c, *[ms(med[k]) for k in order], ms(path), ms(other), ms(other - path)])
    return f"""## 3. Where "other" goes

The hub's and the codec's work per round, timed in the in-process replay of section 2 (one thread,
no other process competing), next to the measured median "other". What is left is
ZeroMQ on loopback, message headers, Python in the three processes, and waiting for a core:
three busy processes share two. For comparison, the worker's own compute
(`GradientComputer.compute`) takes {ms(median(rep.compute))} ms uncontended in the replay,
against the sessions' median `compute_s` of {ms(median(stats['raw'].compute_s))} ms (raw) and
{ms(median(stats['zstd'].compute_s))} ms (zstd).

{table(["codec", *[k + " ms" for k in order], "critical path ms (2 hub decodes)",
        "measured other ms", "remainder ms"], rows)}
"""
