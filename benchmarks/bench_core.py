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

    python benchmarks/bench_core.py [--rounds 300] [--reps 4] [--out docs/BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import gzip
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
import zstandard

from computeshare_desktop import __version__ as CS_VERSION
from computeshare_desktop.codec import get_codec
from computeshare_desktop.codec.delta import make_delta
from computeshare_desktop.data import dataset_info, load_dataset
from computeshare_desktop.evaluation import batch_loss
from computeshare_desktop.hub.presets import Mode
from computeshare_desktop.hub.rounds import Contribution, Round
from computeshare_desktop.hub.trainer import ParameterServer
from computeshare_desktop.models import build_model, flat_gradients, flat_parameters
from computeshare_desktop.protocol import encode
from computeshare_desktop.protocol.messages import Ack, Model, Ping, Pong, Pull, Push
from computeshare_desktop.sampling import shard_indices, stream_positions
from computeshare_desktop.worker.compute import GradientComputer

PIN = "424242"
WORKERS = 2
BATCH = 32
DATASET, MODEL = "mnist-sample", "simplenet"
CODECS = ("raw", "zstd")
NUMEL = 21840  # simplenet's parameters on 28x28 gray images
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
    """A port P such that P, P+1 and P+2 (the hub's event and pairing ports) are free now."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port >= 65533:
            continue
        try:
            for extra in (1, 2):
                with socket.socket() as s2:
                    s2.bind(("127.0.0.1", port + extra))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port triple")


# Keys of the benchmark's hub and workers go to a throwaway folder, not the user's own.
_HOME = {"COMPUTESHARE_HOME": tempfile.mkdtemp(prefix="computeshare-bench-home-")}


def spawn(args: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m computeshare_desktop.cli ARGS`` in its own process group."""
    fh = open(log, "wb")
    proc = subprocess.Popen([sys.executable, "-m", "computeshare_desktop.cli", *args],
                            stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", **_HOME})
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
            raise RuntimeError(f"{what}: {proc.args!r} exited with {proc.returncode}")


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
                 codec, "--local-steps", "0", "--no-balance", "--eval-every", "0",
                 "--dataset", DATASET, "--model", MODEL,
                 "--out", str(out / "hub"), "--quiet", "--no-advertise"], out / "host.log")
    workers = [spawn(["join", f"127.0.0.1:{port}", "--pin", PIN, "--device", "cpu",
                      "--threads", "1", "--quiet", "--name", f"bench-{i + 1}",
                      "--wait", "60"],
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
    per_rep: list[tuple[int, float, float, float, float]] = field(default_factory=list)
    ckpt_other_s: list[float] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # the steady rounds


def round_stats(runs: Sequence[SessionRun], codec: str, warmup: int) -> RoundStats:
    mine = [r for r in runs if r.codec == codec]
    st = RoundStats(codec, 0, [], [], [], [], [], [], 0, 0)
    for run in mine:
        steady = run.rounds[warmup:]
        other = [r["seconds"] - r["compute_s"] for r in steady]
        st.per_rep.append((run.rep, median([r["seconds"] for r in steady]),
                           median([r["compute_s"] for r in steady]), median(other), run.wall_s))
        st.records += steady
        for r, o in zip(steady, other, strict=True):
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
TOKEN, FINGERPRINT = "0" * 32, "0" * 16  # same lengths as auth.new_token() and fingerprint()
CHECK = "0" * 8  # same length as codec.delta.weights_check()
BANDWIDTH = 123456789.01234567  # a measured rate in PUSH: a float repr of typical length
LR = 0.01 * WORKERS  # the step's lr: base lr x samples / batch size


def model_header(v: int, codec: str) -> Model:
    """The MODEL header of version ``v``: a delta from v - 1 (the whole model for v = 0)."""
    return Model(v, codec, NUMEL, v - 1, CHECK, v * BATCH, BATCH, 0, LR, 0.0, codec, 0.01)


def push_header(v: int, codec: str, loss: float, compute_ms: float) -> Push:
    return Push(TOKEN, v, codec, NUMEL, loss, BATCH, 0, compute_ms, BANDWIDTH)


def header_len(message: Any) -> int:
    """Size of the header frame ``message`` encodes to."""
    return len(encode(message, [b""] * type(message).FRAMES)[0])


def header_sizes(codec: str) -> dict[str, int]:
    """Header frame sizes of one round's messages with typical values (3-digit version,
    17-digit float reprs); other rounds differ by a few bytes."""
    loss, compute_ms = 0.12345678901234567, 8.123456789012345
    sizes: dict[str, Any] = {
        "pull": Pull(TOKEN, 149, 2000, FINGERPRINT),
        "model": model_header(150, codec),
        "push": push_header(150, codec, loss, compute_ms),
        "ack": Ack(151),
        "ping": Ping(TOKEN),
        "pong": Pong(150, "training"),
    }
    return {k: header_len(m) for k, m in sizes.items()}


# ---------------------------------------------------------------------------- replay
@dataclass
class Replay:
    """The session replayed in-process with the hub's and the workers' own classes.

    Training is seeded and synchronous and both codecs are lossless, so this computes the same
    model versions as every real session: the losses are checked against the metrics, and then
    the payload sizes are those that were on the wire.
    """

    loss: list[float]  # per version v: the mean loss the hub records for round v + 1
    worker_loss: list[list[float]]  # per version: each worker's loss (in its PUSH header)
    push: dict[str, list[list[int]]]  # codec -> per version: each worker's gradient payload
    model: dict[str, list[int]]  # codec -> per version: the weights payload
    parts: dict[str, dict[str, list[float]]]  # codec -> hub/worker step -> seconds per version
    compute: list[float]  # GradientComputer.compute seconds, uncontended


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t


def replay(rounds: int) -> Replay:
    """Run ``rounds`` versions of simplenet/mnist-sample with 2 workers, no sockets."""
    info, train = dataset_info(DATASET), load_dataset(DATASET, "train")
    server = ParameterServer(build_model(MODEL, info, seed=0), base_lr=0.01, momentum=0.9,
                             mode=Mode("zstd", 0.01, 0), batch_size=BATCH)
    workers = []
    for shard in range(WORKERS):
        idx = shard_indices(len(train), WORKERS, shard, 0)
        workers.append(GradientComputer(build_model(MODEL, info), info, torch.device("cpu"),
                                        train.images[idx].contiguous(),
                                        train.labels[idx].contiguous(),
                                        shard=shard, seed=0))
    out = Replay([], [], {c: [] for c in CODECS}, {c: [] for c in CODECS},
                 {c: {} for c in CODECS}, [])
    previous = None
    for version in range(rounds):
        previous = _replay_round(server, workers, version, previous, out)
    return out


def _replay_round(server: ParameterServer, workers: list[GradientComputer], version: int,
                  previous: torch.Tensor | None, out: Replay) -> torch.Tensor:
    """One round; returns the weights it started from (the next round's delta base)."""
    flat = server.flat()

    def note(codec: str, part: str, seconds: float) -> None:
        out.parts[codec].setdefault(part, []).append(seconds)

    for c in CODECS:  # version 0 goes out whole, every later one as a delta
        codec = get_codec(c)
        encode = (functools.partial(codec.encode, flat) if previous is None else
                  functools.partial(make_delta, codec, previous, flat))
        weights, t = _timed(encode)
        out.model[c].append(len(weights))
        note(c, "hub: encode weights", t)
        decode = functools.partial(codec.decode, weights, NUMEL)
        note(c, "worker: decode weights", _timed(decode)[1])
    rnd, losses = Round(version, 0.0), []
    sizes: dict[str, list[int]] = {c: [] for c in CODECS}
    for worker_id, computer in enumerate(workers, start=1):
        update = computer.gradient(flat, version * BATCH, BATCH)
        grad, loss, samples = update.flat, update.loss, update.samples
        losses.append(loss)
        out.compute.append(update.seconds)
        for c in CODECS:
            codec = get_codec(c)
            payload, t = _timed(functools.partial(codec.encode, grad))
            sizes[c].append(len(payload))
            note(c, "worker: encode gradient", t)
            decode = functools.partial(codec.decode, payload, NUMEL)
            note(c, "hub: decode gradient", _timed(decode)[1])
        rnd.add(Contribution(worker_id, worker_id - 1, grad, samples, loss, 0.0), 0.0)
    (grad, loss), t_avg = _timed(rnd.average)
    _, t_step = _timed(functools.partial(server.step, grad, BATCH * len(rnd.contributions)))
    for c in CODECS:
        out.push[c].append(sizes[c])
        note(c, "hub: average", t_avg)
        note(c, "hub: optimizer step", t_step)
    out.loss.append(loss)
    out.worker_loss.append(losses)
    return flat


def real_gradients(model: torch.nn.Module, count: int, versions: range) -> list[torch.Tensor]:
    """Gradients of ``model`` on the batches the two workers train on at ``versions``."""
    info = dataset_info(DATASET)
    train = load_dataset(DATASET, "train")
    grads = []
    for version in versions:
        for shard in range(WORKERS):
            idx = shard_indices(len(train), WORKERS, shard, 0)
            pos = stream_positions(len(idx), 0, shard, version * BATCH, BATCH)
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
        enc = time_calls(functools.partial(codec.encode, flat), calls)
        dec = time_calls(functools.partial(codec.decode, data, flat.numel()), calls)
        rows.append([name, f"{flat.numel():,}", c, f"{len(data):,}", f"{raw_bytes / len(data):.3f}",
                     f"{1000 * enc[0]:.3f}", f"{1000 * enc[1]:.3f}", f"{1000 * dec[0]:.3f}",
                     f"{1000 * dec[1]:.3f}", str(calls)])
    return rows


def compressibility(grad: torch.Tensor) -> str:
    """Sizes of other lossless encodings of the same gradient, for reference only."""
    values = grad.numpy().astype("<f4")
    plain, shuffled = values.tobytes(), values.view(np.uint8).reshape(-1, 4).T.tobytes()
    sizes = {"gzip-6 of float32": len(gzip.compress(plain, 6)),
             "gzip-9 of float32": len(gzip.compress(plain, 9)),
             "gzip-6 of shuffled float32": len(gzip.compress(shuffled, 6)),
             "zstd-19 of shuffled float32": len(zstandard.ZstdCompressor(level=19).compress(
                 shuffled))}
    text = ", ".join(f"{k} {v:,} B" for k, v in sizes.items())
    return (f"For reference, other lossless encodings of the same simplenet gradient (not "
            f"codecs of the package): {text}.")


def codec_bench(calls: int, big_calls: int) -> tuple[list[list[str]], str]:
    """Encode/decode time and ratio on real simplenet tensors and a ResNet-18 gradient."""
    torch.manual_seed(0)
    model = simplenet()
    grad = real_gradients(model, 1, range(0, 1))[0]
    rows = codec_rows("simplenet gradient (initial weights, batch 32)", grad, calls)
    rows += codec_rows("simplenet weights (initial)", flat_parameters(model), calls)
    reference = compressibility(grad)
    start = time.perf_counter()
    big = build_model("resnet18", dataset_info("cifar10"), seed=0)
    images, labels = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
    torch.nn.functional.cross_entropy(big(images), labels).backward()
    big_grad = flat_gradients(big)
    cost = time.perf_counter() - start
    del big
    if cost > 30:
        return rows, f"ResNet-18 skipped: its gradient took {cost:.0f} s (> 30 s). {reference}"
    rows += codec_rows("ResNet-18 (GroupNorm) CIFAR gradient, 8 random images", big_grad,
                       big_calls)
    return rows, f"ResNet-18 gradient built and computed in {cost:.1f} s. {reference}"


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
    later = [e for e in eval20.evals if e["version"] > (eval20.first_95_version or 10**9)]
    dips = [e for e in later if e["accuracy"] < 0.95]
    dip_note = (f"After first reaching 95%, {len(dips)} of {len(later)} later evals were below "
                f"95%" + (f" (lowest {100 * min(e['accuracy'] for e in dips):.1f}%)." if dips
                          else "."))
    finals = sorted({f"{100 * d.final_acc:.2f}%" for d in [eval20, *defaults]})
    med_wall = median([d.wall_s for d in defaults])
    med_acc = median([d.final_acc for d in defaults])
    return f"""## 4. `computeshare demo` (2 local workers, simplenet, mnist-sample, zstd)

Wall times are from launching the process; "95% seen" is when the first eval record with
accuracy ≥ 0.95 appeared in metrics.jsonl (polled every 50 ms); "95% by elapsed_s" is the
start-up offset (launch to hub session start, from the first record's appearance) plus that
eval's `elapsed_s`. The demo evaluates on a background thread, so the record appears shortly
after the model version is reached.

{table(["run", "rounds", "wall s", "final accuracy", "first version ≥ 95%", "95% seen s",
        "95% by elapsed_s s", "start-up s"], [row(d) for d in runs])}

Default demo (600 rounds, eval every 100), median of {len(defaults)}: **{med_wall:.1f} s**,
final accuracy **{100 * med_acc:.2f}%**.

Accuracy curve of the `--eval-every 20` run: {curve}. {dip_note}
Final accuracy of the 600-round runs: {", ".join(finals)} (training is seeded and synchronous,
so every run computes the same model).
"""


def scale_section(stats: dict[str, RoundStats], derived: dict[str, Any],
                  two: DemoRun | None) -> str:
    z = stats["zstd"]
    o = ORIGINAL
    rows = [
        ["round time (median)", f"{o['round_s'] * 1000:.0f} ms ({o['round_paced_s'] * 1000:.0f} ms "
         "with its pacing sleep)", f"{ms(median(z.round_s))} ms",
         f"{o['round_s'] / median(z.round_s):.1f}× faster"],
        ["overhead outside worker compute", f"{o['overhead_s'] * 1000:.0f} ms",
         f"{ms(median(z.other_s))} ms", f"{o['overhead_s'] / median(z.other_s):.1f}× less"],
        ["gradient push per worker", f"{o['push_kb']} kB (gzip)",
         f"{kb(derived['zstd']['push'])} kB (zstd, lossless)",
         f"{derived['zstd']['push'] / (o['push_kb'] * KB):.2f}× larger"],
        ["model download per worker", f"{o['model_kb']} kB (JSON)",
         f"{kb(derived['zstd']['model'])} kB (zstd)",
         f"{o['model_kb'] * KB / derived['zstd']['model']:.1f}× less"],
        ["bytes per round (2 workers)", f"{o['round_kb']:,} kB", f"{kb(median(z.wire))} kB",
         f"{o['round_kb'] * KB / median(z.wire):.1f}× less"],
    ]
    if two is not None:
        rows.append(["two epochs (125 rounds of 2×32)",
                     f"{o['two_epochs_s']} s, {100 * o['two_epochs_acc']:.0f}% accuracy",
                     f"{two.wall_s:.1f} s (process wall, start-up included), "
                     f"{100 * two.final_acc:.1f}%",
                     f"{o['two_epochs_s'] / two.wall_s:.0f}× faster"])
    return f"""## 6. For scale: the original computeShare

Original figures were measured earlier on this same machine and data and are quoted as given
(not rerunnable here). Ours: zstd (the default codec), medians from sections 1, 2 and 4.

{table(["", "original computeShare", "ComputeShare desktop", "ratio"], rows)}

The original's 61 kB gzip push is smaller than every lossless float32 encoding of a simplenet
gradient tried in section 5 (see the reference sizes there); how it got there (a lossy
representation, or different gradients) cannot be checked here.
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
        per_session = sorted(o for _, _, _, o, _ in stats[c].per_rep)
        add(f"overhead outside compute, {c}", "≤ 10 ms median",
            f"{ms(other)} ms (sessions {ms(per_session[0])}-{ms(per_session[-1])})",
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
    return ("## 7. Targets\n\n" + table(["target", "limit", "measured", "result", "margin"], rows)
            + "\n"), verdicts


# ---------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=300,
                   help="rounds per session (default %(default)s)")
    p.add_argument("--reps", type=int, default=4, help="sessions per codec (default %(default)s)")
    p.add_argument("--warmup", type=int, default=20, help="rounds skipped per session")
    p.add_argument("--demos", type=int, default=2, help="default demo runs (default %(default)s)")
    p.add_argument("--codec-calls", type=int, default=200)
    p.add_argument("--out", default=None, help="also write the report to this Markdown file")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for sig in (signal.SIGTERM, signal.SIGHUP):  # so that `finally: cleanup()` still runs
        signal.signal(sig, _exit_on_signal)
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


def _exit_on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


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
    log("in-process replay")
    replayed = replay(args.rounds)
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
    return render(args, started, stats, replayed, codec_table, big_note, eval20, defaults, two)


def render(args: argparse.Namespace, started: dt.datetime, stats: dict[str, RoundStats],
           rep: Replay, codec_table: list[list[str]], big_note: str, eval20: DemoRun,
           defaults: list[DemoRun], two: DemoRun | None) -> str:
    versions = range(args.warmup, args.rounds)
    bytes_text, derived = bytes_section(stats, rep, versions)
    targets_text, verdicts = targets_section(stats, derived, eval20)
    arg_defaults = {"rounds": 300, "reps": 4, "warmup": 20, "demos": 2, "codec_calls": 200,
                    "out": None}
    cmd = "python benchmarks/bench_core.py" + "".join(
        f" --{k.replace('_', '-')} {getattr(args, k)}" for k, v in arg_defaults.items()
        if getattr(args, k) != v)
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
of all repetitions unless stated; kB = 1,000 bytes. Workers pair with the PIN (SPAKE2) and
every request, reply and event runs over CURVE-encrypted ZeroMQ, as in real use; the byte
counts are application frames, to which CURVE adds 16 bytes of MAC per message.

{round_section(stats, args.warmup, args.rounds, args.reps)}
{bytes_text}
{overhead_section(stats, rep, versions)}
{demo_section(eval20, defaults, two)}
## 5. Codecs: encode/decode time and compression

Real tensors, timed in the benchmark process with torch at 1 thread; every round trip is
checked bit-exact. {big_note}

{codec_md}

{scale_section(stats, derived, two)}
{targets_text}
{chr(10).join("- " + v for v in verdicts)}
"""


if __name__ == "__main__":
    sys.exit(main())
