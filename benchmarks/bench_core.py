"""Core benchmark: round time, bytes on the wire, codec cost and demo time-to-accuracy.

Runs everything side by side in one process tree on this machine and prints Markdown tables
(and writes them to ``--out``). What it measures:

1. Real ``computeshare host`` + two ``computeshare join`` processes on 127.0.0.1 (simplenet,
   mnist-sample, batch 32 per worker), for the raw and zstd codecs, repeated and alternated
   (raw, zstd / zstd, raw / ...) so machine noise hits both alike. Round time at the hub is
   split into the slowest worker's compute and everything else (hub + transport + codec).
2. Bytes per round from the hub's metrics, and bytes per push / model download computed from
   the protocol (real header frames from ``protocol.encode`` + real codec payloads).
3. ``computeshare demo`` as a subprocess: wall time from launch to the first eval >= 95%,
   and the default demo's final accuracy and wall time.
4. Codec encode/decode time and compression ratio on real gradients.

Usage (with the project's virtual environment active)::

    python benchmarks/bench_core.py [--rounds 300] [--reps 3] [--out docs/BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from computeshare_desktop import __version__ as CS_VERSION
from computeshare_desktop.codec import get_codec
from computeshare_desktop.data import dataset_info, load_dataset
from computeshare_desktop.evaluation import batch_loss
from computeshare_desktop.models import build_model, flat_gradients, flat_parameters
from computeshare_desktop.protocol import encode
from computeshare_desktop.protocol.messages import Ack, Model, Ping, Pong, Pull, Push
from computeshare_desktop.sampling import batch_indices, shard_indices

PIN = "424242"
WORKERS = 2
BATCH = 32
DATASET, MODEL = "mnist-sample", "simplenet"
CODECS = ("raw", "zstd")
KB = 1000  # kB here are 1,000 bytes, as in the original computeShare figures

# The original computeShare, measured earlier on this machine and data (not rerunnable here).
ORIGINAL = {
    "round_s": 0.196, "overhead_s": 0.176, "round_paced_s": 1.196,
    "push_kb": 61, "model_kb": 463, "round_kb": 1049, "two_epochs_s": 155, "two_epochs_acc": 0.91,
}
TARGET_OVERHEAD_S = 0.010
TARGET_ROUND_KB = 360
TARGET_PUSH_RATIO = 1.05
TARGET_DEMO_95_S = 60.0

PROCS: list[subprocess.Popen[bytes]] = []  # every process we started, for cleanup


# ---------------------------------------------------------------------------- helpers
def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def p90(xs: Sequence[float]) -> float:
    return float(np.percentile(np.asarray(xs, dtype=float), 90))


def ms(x: float) -> str:
    return f"{1000 * x:.2f}"


def kb(x: float) -> str:
    return f"{x / KB:,.1f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def free_port_pair() -> int:
    """A port P such that P and P+1 (the hub's event port) are free right now."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port >= 65535:
            continue
        with socket.socket() as s2:
            try:
                s2.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair")


def spawn(args: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m computeshare_desktop.cli ARGS`` in its own process group."""
    fh = open(log, "wb")
    proc = subprocess.Popen([sys.executable, "-m", "computeshare_desktop.cli", *args],
                            stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    fh.close()
    PROCS.append(proc)
    return proc


def kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill a process we started and its process group (the demo's workers)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def cleanup() -> None:
    for proc in PROCS:
        if proc.poll() is None:
            kill(proc)
        else:  # the demo's workers share its group and may outlive it
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def wait_all(procs: Sequence[subprocess.Popen[bytes]], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{what}: timed out after {timeout_s:.0f} s") from None
        if proc.returncode != 0:
            raise RuntimeError(f"{what}: {proc.args} exited with {proc.returncode}")


def read_metrics(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / "metrics.jsonl"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:  # a line being written right now
            break
    return records


# ---------------------------------------------------------------------------- sessions
@dataclass
class SessionRun:
    codec: str
    rep: int
    wall_s: float
    rounds: list[dict[str, Any]]
    out_dir: Path


def run_session(codec: str, rounds: int, rep: int, root: Path) -> SessionRun:
    """One ``host`` process plus two ``join`` processes until the session is done."""
    out = root / f"session-{codec}-{rep}"
    out.mkdir(parents=True)
    port = free_port_pair()
    start = time.monotonic()
    hub = spawn(["host", "--pin", PIN, "--bind", "127.0.0.1", "--port", str(port), "--workers",
                 str(WORKERS), "--rounds", str(rounds), "--batch-size", str(BATCH), "--codec",
                 codec, "--eval-every", "0", "--dataset", DATASET, "--model", MODEL,
                 "--out", str(out / "hub"), "--quiet"], out / "host.log")
    workers = [spawn(["join", f"127.0.0.1:{port}", "--pin", PIN, "--device", "cpu",
                      "--threads", "1", "--quiet", "--name", f"bench-{i + 1}"],
                     out / f"worker{i + 1}.log") for i in range(WORKERS)]
    try:
        wait_all([hub, *workers], 60 + rounds * 0.5, f"{codec} session {rep}")
    finally:
        for proc in (hub, *workers):
            if proc.poll() is None:
                kill(proc)
    wall = time.monotonic() - start
    records = [r for r in read_metrics(out / "hub") if r.get("type") == "round"]
    if len(records) != rounds:
        raise RuntimeError(f"{codec} session {rep}: {len(records)} round records, not {rounds}")
    return SessionRun(codec, rep, wall, records, out / "hub")


@dataclass
class RoundStats:
    codec: str
    n: int
    round_s: list[float]
    compute_s: list[float]
    other_s: list[float]
    wire: list[int]
    bytes_in: list[int]
    bytes_out: list[int]
    rejected: int
    partial: int
    per_rep: list[tuple[int, float, float, float]] = field(default_factory=list)
    ckpt_other_s: list[float] = field(default_factory=list)


def round_stats(runs: Sequence[SessionRun], codec: str, warmup: int) -> RoundStats:
    mine = [r for r in runs if r.codec == codec]
    st = RoundStats(codec, 0, [], [], [], [], [], [], 0, 0)
    for run in mine:
        steady = run.rounds[warmup:]
        other = [r["seconds"] - r["compute_s"] for r in steady]
        st.per_rep.append((run.rep, median([r["seconds"] for r in steady]),
                           median([r["compute_s"] for r in steady]), median(other)))
        for r, o in zip(steady, other):
            st.round_s.append(r["seconds"])
            st.compute_s.append(r["compute_s"])
            st.other_s.append(o)
            st.bytes_in.append(r["bytes_in"])
            st.bytes_out.append(r["bytes_out"])
            st.wire.append(r["bytes_in"] + r["bytes_out"])
            st.rejected += r["rejected"]
            st.partial += r["contributors"] != WORKERS
            # A checkpoint is written after closing version v (v % 50 == 0), before the next
            # round's model replies leave: it lands in round v + 1.
            if (r["round"] - 1) % 50 == 0:
                st.ckpt_other_s.append(o)
        st.n += len(steady)
    return st


# ---------------------------------------------------------------------------- protocol sizes
def header_sizes(codec: str) -> dict[str, int]:
    """Header frame sizes of the messages of one round, with typical field values.

    Variable parts: a 32-hex token, a 3-digit version (rounds 100-999), and the float repr
    of loss and compute_ms (17-18 significant digits); other rounds differ by a few bytes.
    """
    token, fp = "0" * 32, "0" * 16
    loss, compute_ms = 0.12345678901234567, 8.123456789012345
    sizes = {
        "pull": Pull(token, 149, 2000, fp),
        "model": Model(150, codec, 21840),
        "push": Push(token, 150, codec, 21840, loss, BATCH, compute_ms),
        "ack": Ack(151),
        "ping": Ping(token),
        "pong": Pong(150, "training"),
    }
    return {k: len(encode(m, [b""] * type(m).FRAMES)[0]) for k, m in sizes.items()}


def real_gradients(model: torch.nn.Module, count: int, versions: range) -> list[torch.Tensor]:
    """Gradients of ``model`` on the batches the two workers train on at ``versions``."""
    info = dataset_info(DATASET)
    train = load_dataset(DATASET, "train")
    grads = []
    for version in versions:
        for shard in range(WORKERS):
            idx = shard_indices(len(train), WORKERS, shard, 0)
            pos = batch_indices(len(idx), BATCH, 0, shard, version)
            model.zero_grad(set_to_none=True)
            batch_loss(model, train.images[idx[pos]], train.labels[idx[pos]], info).backward()
            grads.append(flat_gradients(model))
            if len(grads) >= count:
                return grads
    return grads


def simplenet(state_path: Path | None = None) -> torch.nn.Module:
    model = build_model(MODEL, dataset_info(DATASET), seed=0)
    if state_path is not None:
        model.load_state_dict(torch.load(state_path, map_location="cpu", weights_only=True))
    return model


@dataclass
class PayloadSizes:
    push: dict[str, float]  # codec -> median payload bytes of a gradient push
    model: dict[str, float]  # codec -> payload bytes of a model download
    where: str


def payload_sizes(trained: Path | None, rounds: int) -> PayloadSizes:
    """Codec payload sizes of real gradients and weights, at the trained weights of a run."""
    model = simplenet(trained)
    versions = range(max(0, rounds - 20), rounds)
    grads = real_gradients(model, 40, versions)
    weights = flat_parameters(model)
    push = {c: median([len(get_codec(c).encode(g)) for g in grads]) for c in CODECS}
    down = {c: float(len(get_codec(c).encode(weights))) for c in CODECS}
    where = (f"weights after {rounds} rounds of a zstd run, gradients on the workers' batches "
             f"of versions {versions.start}-{versions.stop - 1} (median of {len(grads)})")
    return PayloadSizes(push, down, where)


# ---------------------------------------------------------------------------- codecs
def time_calls(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    fn()  # warm up
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return median(times), p90(times)


def codec_rows(name: str, flat: torch.Tensor, calls: int) -> list[list[str]]:
    rows = []
    raw_bytes = flat.numel() * 4
    for c in CODECS:
        codec = get_codec(c)
        data = codec.encode(flat)
        assert torch.equal(codec.decode(data, flat.numel()), flat), f"{c} is not lossless"
        enc = time_calls(lambda: codec.encode(flat), calls)
        dec = time_calls(lambda: codec.decode(data, flat.numel()), calls)
        rows.append([name, f"{flat.numel():,}", c, f"{len(data):,}", f"{raw_bytes / len(data):.3f}",
                     ms(enc[0]), ms(enc[1]), ms(dec[0]), ms(dec[1]), str(calls)])
    return rows


def codec_bench(calls: int, big_calls: int) -> tuple[list[list[str]], str]:
    """Encode/decode time and ratio on real simplenet tensors and a ResNet-18 gradient."""
    torch.manual_seed(0)
    model = simplenet()
    grad = real_gradients(model, 1, range(0, 1))[0]
    rows = codec_rows("simplenet gradient (initial weights, batch 32)", grad, calls)
    rows += codec_rows("simplenet weights (initial)", flat_parameters(model), calls)
    start = time.perf_counter()
    big = build_model("resnet18", dataset_info("cifar10"), seed=0)
    images, labels = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
    torch.nn.functional.cross_entropy(big(images), labels).backward()
    big_grad = flat_gradients(big)
    cost = time.perf_counter() - start
    del big
    if cost > 30:
        return rows, f"ResNet-18 skipped: its gradient took {cost:.0f} s (> 30 s)."
    rows += codec_rows("ResNet-18 (GroupNorm) CIFAR gradient, 8 random images", big_grad,
                       big_calls)
    return rows, f"ResNet-18 gradient built and computed in {cost:.1f} s."


# ---------------------------------------------------------------------------- demos
@dataclass
class DemoRun:
    label: str
    wall_s: float
    final_acc: float
    rounds: int
    first_95_poll_s: float | None  # launch -> eval line >= 95% seen in metrics.jsonl
    first_95_elapsed_s: float | None  # that eval's elapsed_s (since the hub session began)
    first_95_version: int | None
    startup_s: float | None  # launch -> hub session start, from the first record
    evals: list[dict[str, Any]]


def run_demo(label: str, extra: Sequence[str], root: Path, timeout_s: float) -> DemoRun:
    """``computeshare demo --quiet --out DIR EXTRA``, polling metrics.jsonl every 50 ms."""
    out = root / f"demo-{label}"
    out.mkdir(parents=True)
    start = time.monotonic()
    proc = spawn(["demo", "--quiet", "--out", str(out / "run"), *extra], out / "demo.log")
    seen_first = hit = None
    try:
        while proc.poll() is None:
            if time.monotonic() - start > timeout_s:
                raise RuntimeError(f"demo {label}: timed out after {timeout_s:.0f} s")
            now = time.monotonic() - start
            records = read_metrics(out / "run") if (seen_first is None or hit is None) else []
            if records and seen_first is None:
                seen_first = (now, records[0]["elapsed_s"])
            if hit is None:
                hit = next(((now, r) for r in records if r.get("type") == "eval"
                            and r["accuracy"] >= 0.95), None)
            time.sleep(0.05)
        wall = time.monotonic() - start
    finally:
        kill(proc)  # reaps the demo's own workers too, should any remain
    if proc.returncode != 0:
        raise RuntimeError(f"demo {label}: exit code {proc.returncode}; see {out / 'demo.log'}")
    records = read_metrics(out / "run")
    evals = [r for r in records if r.get("type") == "eval"]
    rounds = sum(r.get("type") == "round" for r in records)
    if hit is None:  # crossed in an eval written after the last poll: exit time bounds it
        late = next((r for r in evals if r["accuracy"] >= 0.95), None)
        hit = (wall, late) if late else None
    startup = seen_first[0] - seen_first[1] if seen_first else None
    return DemoRun(label, wall, evals[-1]["accuracy"], rounds,
                   hit[0] if hit else None, hit[1]["elapsed_s"] if hit else None,
                   hit[1]["version"] if hit else None, startup, evals)


# ---------------------------------------------------------------------------- report
def machine() -> list[str]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import zmq
    import zstandard
    return [f"- CPUs: {os.cpu_count()} (nproc {len(os.sched_getaffinity(0))}), "
            f"CPU model: {model}",
            f"- Python {platform.python_version()}, torch {torch.__version__}, "
            f"pyzmq {zmq.__version__} (libzmq {zmq.zmq_version()}), zstandard "
            f"{zstandard.__version__}, computeshare-desktop {CS_VERSION}",
            f"- OS: {platform.platform()}"]


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
    main = table(["codec", "rounds", "round median ms", "round p90 ms", "compute median ms",
                  "compute p90 ms", "other median ms", "other p90 ms", "rounds/s",
                  "rejected", "partial rounds"], rows)
    reps_rows = [[c, rep, ms(a), ms(b), ms(o)] for c, s in stats.items()
                 for rep, a, b, o in s.per_rep]
    per_rep = table(["codec", "repetition", "round median ms", "compute median ms",
                     "other median ms"], sorted(reps_rows, key=lambda x: (x[1], x[0])))
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

Per repetition (medians):

{per_rep}

Rounds right after a checkpoint (the hub writes checkpoint.pt every 50 rounds, not
configurable from the CLI), median "other": {ckpt_note or "none in the window"}.
"""


def bytes_section(stats: dict[str, RoundStats], sizes: PayloadSizes) -> tuple[str, dict[str, Any]]:
    rows, check, derived = [], [], {}
    numel_bytes = 21840 * 4
    for c, s in stats.items():
        h = header_sizes(c)
        push = h["push"] + sizes.push[c]
        down = h["model"] + sizes.model[c]
        expect_in = WORKERS * (h["pull"] + push)
        expect_out = WORKERS * (down + h["ack"])
        m_in, m_out, m_wire = median(s.bytes_in), median(s.bytes_out), median(s.wire)
        implied_push = m_in / WORKERS - h["pull"] - h["push"]
        implied_down = m_out / WORKERS - h["ack"] - h["model"]
        derived[c] = {"wire": m_wire, "push": push, "implied_push_total": implied_push + h["push"]}
        rows.append([c, kb(m_wire), kb(p90(s.wire)), kb(m_in), kb(m_out),
                     f"{push:,.0f}", f"{down:,.0f}", f"{push / numel_bytes:.3f}×",
                     f"{(implied_push + h['push']) / numel_bytes:.3f}×"])
        check.append([c, f"{expect_in:,.0f}", f"{m_in:,.0f}", f"{m_in - expect_in:+,.0f}",
                      f"{expect_out:,.0f}", f"{m_out:,.0f}", f"{m_out - expect_out:+,.0f}",
                      f"{implied_push:,.0f}", f"{sizes.push[c]:,.0f}",
                      f"{implied_down:,.0f}", f"{sizes.model[c]:,.0f}"])
    h = header_sizes("zstd")
    text = f"""## 2. Bytes on the wire

Bytes are application frames (header frame + payload frame) as the hub counts them; ZeroMQ's
own framing (2-9 bytes per frame, plus the REQ envelope's empty delimiter) and TCP/IP headers
are not included. Reference: the raw float32 gradient of simplenet is 21,840 params × 4 =
{numel_bytes:,} bytes.

Per round (2 workers) from metrics.jsonl, and per worker computed from the protocol:

{table(["codec", "wire/round median kB", "wire/round p90 kB", "in median kB",
        "out median kB", "push bytes (hdr+payload)", "model download bytes (hdr+payload)",
        "push / raw gradient", "push / raw (implied by metrics)"], rows)}

Header frames with typical values (bytes): PULL {h['pull']}, MODEL {h['model']},
PUSH {h['push']}, ACK {h['ack']}, PING {h['ping']}, PONG {h['pong']} (one PING/PONG per worker
per second, i.e. well under one per round). Codec payloads: {sizes.where}; the raw payload is
exactly {numel_bytes:,} bytes.

Cross-check: computed per round = 2 × (PULL + PUSH) in and 2 × (MODEL + ACK) out, against
the metrics' medians; "implied" payloads are what the measured medians leave after the headers:

{table(["codec", "in computed", "in measured", "diff", "out computed", "out measured", "diff",
        "push payload implied", "push payload computed", "model payload implied",
        "model payload computed"], check)}
"""
    return text, derived


def demo_section(eval20: DemoRun, defaults: list[DemoRun], two: DemoRun | None) -> str:
    def row(d: DemoRun) -> list[str]:
        poll = f"{d.first_95_poll_s:.2f}" if d.first_95_poll_s is not None else "—"
        calc = (f"{d.startup_s + d.first_95_elapsed_s:.2f}"
                if d.startup_s is not None and d.first_95_elapsed_s is not None else "—")
        return [d.label, str(d.rounds), f"{d.wall_s:.1f}", f"{100 * d.final_acc:.2f}%",
                str(d.first_95_version or "never"), poll, calc,
                f"{d.startup_s:.2f}" if d.startup_s is not None else "—"]
    runs = [eval20, *defaults] + ([two] if two else [])
    curve = ", ".join(f"v{e['version']} {100 * e['accuracy']:.1f}%" for e in eval20.evals)
    med_wall = median([d.wall_s for d in defaults])
    med_acc = median([d.final_acc for d in defaults])
    return f"""## 3. `computeshare demo` (2 local workers, simplenet, mnist-sample, zstd)

Wall times are from launching the process; "95% seen" is when the first eval record with
accuracy ≥ 0.95 appeared in metrics.jsonl (polled every 50 ms); "95% by elapsed_s" is the
start-up offset (launch to hub session start, from the first record's appearance) plus that
eval's `elapsed_s`. The demo evaluates on a background thread, so the record appears shortly
after the model version is reached.

{table(["run", "rounds", "wall s", "final accuracy", "first version ≥ 95%", "95% seen s",
        "95% by elapsed_s s", "start-up s"], [row(d) for d in runs])}

Default demo (600 rounds, eval every 100), median of {len(defaults)}: **{med_wall:.1f} s**,
final accuracy **{100 * med_acc:.2f}%**.

Accuracy curve of the `--eval-every 20` run: {curve}.
"""


def scale_section(stats: dict[str, RoundStats], derived: dict[str, Any],
                  sizes: PayloadSizes, two: DemoRun | None) -> str:
    z = stats["zstd"]
    hz = header_sizes("zstd")
    o = ORIGINAL
    rows = [
        ["round time (median)", f"{o['round_s'] * 1000:.0f} ms ({o['round_paced_s'] * 1000:.0f} ms "
         "with its pacing sleep)", f"{ms(median(z.round_s))} ms",
         f"{o['round_s'] / median(z.round_s):.1f}× faster"],
        ["overhead outside worker compute", f"{o['overhead_s'] * 1000:.0f} ms",
         f"{ms(median(z.other_s))} ms", f"{o['overhead_s'] / median(z.other_s):.1f}× less"],
        ["gradient push per worker", f"{o['push_kb']} kB (gzip)",
         f"{kb(derived['zstd']['push'])} kB (zstd)",
         f"{o['push_kb'] * KB / derived['zstd']['push']:.2f}×"],
        ["model download per worker", f"{o['model_kb']} kB (JSON)",
         f"{kb(sizes.model['zstd'] + hz['model'])} kB (zstd)",
         f"{o['model_kb'] * KB / (sizes.model['zstd'] + hz['model']):.1f}× less"],
        ["bytes per round (2 workers)", f"{o['round_kb']:,} kB", f"{kb(median(z.wire))} kB",
         f"{o['round_kb'] * KB / median(z.wire):.1f}× less"],
    ]
    if two is not None:
        rows.append(["two epochs (125 rounds of 2×32)",
                     f"{o['two_epochs_s']} s, {100 * o['two_epochs_acc']:.0f}% accuracy",
                     f"{two.wall_s:.1f} s (process wall, start-up included), "
                     f"{100 * two.final_acc:.1f}%", f"{o['two_epochs_s'] / two.wall_s:.0f}× faster"])
    return f"""## 5. For scale: the original computeShare

Original figures were measured earlier on this same machine and data and are quoted as given
(not rerunnable here). Ours: zstd (the default codec), medians from sections 1-3.

{table(["", "original computeShare", "ComputeShare desktop", "ratio"], rows)}
"""


def targets_section(stats: dict[str, RoundStats], derived: dict[str, Any],
                    eval20: DemoRun) -> tuple[str, list[str]]:
    rows, verdicts = [], []
    raw_grad = 21840 * 4

    def add(name: str, target: str, value: str, ok: bool, margin: str) -> None:
        rows.append([name, target, value, "**PASS**" if ok else "**FAIL**", margin])
        verdicts.append(f"{'PASS' if ok else 'FAIL'}: {name} = {value} (target {target}; {margin})")

    for c in CODECS:
        other = median(stats[c].other_s)
        add(f"overhead outside compute, {c}", "≤ 10 ms median", f"{ms(other)} ms",
            other <= TARGET_OVERHEAD_S, f"{ms(other - TARGET_OVERHEAD_S)} ms vs target")
    for c in CODECS:
        wire = derived[c]["wire"]
        add(f"bytes per round, {c} (lossless)", f"≤ {TARGET_ROUND_KB} kB", f"{kb(wire)} kB",
            wire <= TARGET_ROUND_KB * KB, f"{kb(wire - TARGET_ROUND_KB * KB)} kB vs target")
    for c in CODECS:
        ratio = derived[c]["push"] / raw_grad
        add(f"bytes per push, {c}", f"≤ {TARGET_PUSH_RATIO:.2f}× raw ({raw_grad * 1.05:,.0f} B)",
            f"{derived[c]['push']:,.0f} B = {ratio:.3f}×", ratio <= TARGET_PUSH_RATIO,
            f"{ratio - TARGET_PUSH_RATIO:+.3f}× vs target")
    t = eval20.first_95_poll_s
    add("demo to 95% test accuracy", f"≤ {TARGET_DEMO_95_S:.0f} s",
        f"{t:.1f} s" if t is not None else "never", t is not None and t <= TARGET_DEMO_95_S,
        f"{t - TARGET_DEMO_95_S:+.1f} s vs target" if t is not None else "did not reach 95%")
    return ("## 6. Targets\n\n" + table(["target", "limit", "measured", "result", "margin"], rows)
            + "\n"), verdicts


# ---------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=300, help="rounds per session (default %(default)s)")
    p.add_argument("--reps", type=int, default=3, help="sessions per codec (default %(default)s)")
    p.add_argument("--warmup", type=int, default=20, help="rounds skipped per session")
    p.add_argument("--demos", type=int, default=2, help="default demo runs (default %(default)s)")
    p.add_argument("--codec-calls", type=int, default=200)
    p.add_argument("--out", default=None, help="also write the report to this Markdown file")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="cs-bench-") as tmp:
            report = run_all(args, Path(tmp), started)
    finally:
        cleanup()
    total = time.monotonic() - t0
    report = report.replace("@@TOTAL@@", f"{total:.0f}")
    print(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report)
        print(f"written to {args.out}", file=sys.stderr)
    return 0


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def run_all(args: argparse.Namespace, root: Path, started: dt.datetime) -> str:
    log("codec micro-benchmark")
    codec_table, big_note = codec_bench(args.codec_calls, max(5, args.codec_calls // 10))
    runs: list[SessionRun] = []
    for rep in range(args.reps):
        for codec in (CODECS if rep % 2 == 0 else CODECS[::-1]):
            run = run_session(codec, args.rounds, rep + 1, root)
            log(f"session {codec} #{rep + 1}: {args.rounds} rounds, wall {run.wall_s:.1f} s")
            runs.append(run)
    stats = {c: round_stats(runs, c, args.warmup) for c in CODECS}
    trained = next(r.out_dir for r in runs if r.codec == "zstd") / "trained_model.pth"
    sizes = payload_sizes(trained, args.rounds)
    log("demos")
    defaults: list[DemoRun] = []
    eval20 = two = None
    # Interleaved so a slow spell does not land on one kind of run only.
    plan = [("default-1", [], 300.0), ("eval-every-20", ["--eval-every", "20"], 300.0)]
    plan += [(f"default-{i + 2}", [], 300.0) for i in range(args.demos - 1)]
    plan += [("two-epochs", ["--rounds", "125"], 200.0)]
    for label, extra, timeout in plan:
        d = run_demo(label, extra, root, timeout)
        log(f"demo {label}: {d.wall_s:.1f} s, {100 * d.final_acc:.2f}%, 95% at {d.first_95_poll_s}")
        if label.startswith("default"):
            defaults.append(d)
        elif label == "eval-every-20":
            eval20 = d
        else:
            two = d
    assert eval20 is not None
    return render(args, started, stats, sizes, codec_table, big_note, eval20, defaults, two)


def render(args: argparse.Namespace, started: dt.datetime, stats: dict[str, RoundStats],
           sizes: PayloadSizes, codec_table: list[list[str]], big_note: str, eval20: DemoRun,
           defaults: list[DemoRun], two: DemoRun | None) -> str:
    bytes_text, derived = bytes_section(stats, sizes)
    targets_text, verdicts = targets_section(stats, derived, eval20)
    cmd = "python benchmarks/bench_core.py" + (f" --rounds {args.rounds}" if args.rounds != 300
                                                else "") + (f" --out {args.out}" if args.out else "")
    codec_md = table(["tensor", "values", "codec", "bytes", "ratio vs float32", "encode median ms",
                      "encode p90 ms", "decode median ms", "decode p90 ms", "calls"], codec_table)
    return f"""# ComputeShare desktop — core benchmarks

Generated by `benchmarks/bench_core.py` on {started:%Y-%m-%d %H:%M} UTC (whole run @@TOTAL@@ s).

## Machine

{chr(10).join(machine())}

Rerun (repository root, project virtual environment active):

```
{cmd}
```

Setup: simplenet on mnist-sample, {WORKERS} workers × batch {BATCH}, loopback. The hub is a
real `computeshare host` process (`--bind 127.0.0.1 --eval-every 0`); each worker is a real
`python -m computeshare_desktop.cli join 127.0.0.1:PORT --pin ... --device cpu --threads 1
--quiet` process. Hub and both workers share the machine's cores, so "compute" and "other"
both include time spent waiting for a core. Results are medians over all steady-state rounds
of all repetitions unless stated; kB = 1,000 bytes.

{round_section(stats, args.warmup, args.rounds, args.reps)}
{bytes_text}
{demo_section(eval20, defaults, two)}
## 4. Codecs: encode/decode time and compression

Real tensors, timed in the benchmark process with torch at 1 thread; every round trip is
checked bit-exact. {big_note}

{codec_md}

{scale_section(stats, derived, sizes, two)}
{targets_text}
{chr(10).join("- " + v for v in verdicts)}
"""


if __name__ == "__main__":
    sys.exit(main())
