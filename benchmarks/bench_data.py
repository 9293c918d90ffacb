"""Your own data (issue 19, Measures): what the shards cost on the wire, how fast a folder is
prepared, and a table trained by 2 workers against one machine.

Three parts, each measured side by side in one run, on data the benchmark writes itself:

* **images**: a folder of N JPEGs (10 class folders, S x S RGB; default 20,000 at 96 px),
  trained by a real ``computeshare host`` and 2 ``computeshare join`` workers on a virtual
  LAN shaped to 100 Mbit/s per machine (network namespaces, htb; needs root, else loopback,
  and the report says which) for E epochs of each worker's shard. Per epoch: data, model and
  update bytes per round (metrics.jsonl), the bytes on the hub's link per round, and samples
  per second. Epoch 1 starts when the hub says the second worker joined (a shard's
  download begins with its Welcome; the workers' start-up and the first one's head start
  are not counted), so it includes the download.
* **prepare**: a folder of M small PNGs (default 100,000 at 32 px) prepared by the hub's own
  ``prepare_folder`` in a child process: images/s, the child's peak RSS (against a child
  that imports the same modules and prepares nothing), and a second run (cache hit).
* **table**: a CSV of R rows x F features (default 100,000 x 50; a hidden random network's
  5 classes, text labels) trained by 2 workers on the same LAN, and the same model alone in
  a plain torch loop (the same initial weights, global batch and rate): the loop's final test
  accuracy after one epoch sets the target, 95% of it; the time each takes to reach it.

    sudo .venv/bin/python -m benchmarks.bench_data                  # all three (10.5-12 min here)
    sudo .venv/bin/python -m benchmarks.bench_data --quick          # scaled down (2.3 min here)
    python -m benchmarks.bench_data --parts prepare --prep-images 20000
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks._common import (CLI, exit_on_signal, free_ports, home_env, machine, median,
                                stop, table, write_text)
from benchmarks.lan.runs import Lines

REPO = Path(__file__).resolve().parents[1]
PIN = "424242"
BATCH = 32  # per worker
LR = 0.05  # for one worker's batch (the hub steps at LR x 2 on the two batches' mean)
IMAGE_LR = 0.01  # the image net diverges at 0.05 (loss 1e25 within 30 rounds)
POLL_S = 0.05

MODELS = '''
import torch
from torch import nn


class ImageNet(nn.Module):
    """Three strided convolutions and a mean: small enough that a round is compute."""

    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, 16, 5, stride=2, padding=2), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.head(self.body(x).mean(dim=(2, 3)))


class TableNet(nn.Module):
    def __init__(self, in_features, num_classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(in_features, 64), nn.ReLU(),
                                  nn.Linear(64, num_classes))

    def forward(self, x):
        return self.body(x)
'''


def log(text: str) -> None:
    print(f"[bench_data {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- data
def write_images(root: Path, count: int, size: int, *, fmt: str = "JPEG",
                 classes: int = 10, seed: int = 0) -> Path:
    """``count`` images in ``classes`` folders: a class's colour gradient at a class angle,
    a bright square at random, and noise."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    suffix = ".jpg" if fmt == "JPEG" else ".png"
    for c in range(classes):
        (root / f"class_{c:02d}").mkdir(parents=True, exist_ok=True)
    for i in range(count):
        c = i % classes
        angle = math.pi * c / classes
        ramp = np.cos(angle) * xx + np.sin(angle) * yy
        colour = np.array([(c * 37) % 255, (c * 91) % 255, (c * 53) % 255]) / 255
        pixels = 0.6 * ramp[..., None] * colour + 0.25 * rng.random((size, size, 3))
        s, x, y = size // 4, *rng.integers(0, size - size // 4, 2)
        pixels[y:y + s, x:x + s] += 0.3
        image = Image.fromarray((255 * pixels.clip(0, 1)).astype(np.uint8))
        image.save(root / f"class_{c:02d}" / f"{i:06d}{suffix}", fmt)
    return root


def write_table(path: Path, rows: int, features: int, *, classes: int = 5,
                seed: int = 0) -> Path:
    """A CSV of ``features`` numeric columns and a text label: the argmax of a random tanh
    network over them, one label in 20 replaced at random."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features)).astype(np.float32)
    w1, w2 = rng.normal(size=(features, 32)) / math.sqrt(features), rng.normal(size=(32, classes))
    label = (np.tanh(x @ w1) @ w2).argmax(axis=1)
    noisy = rng.random(rows) < 0.05
    label[noisy] = rng.integers(0, classes, noisy.sum())
    names = np.array([f"kind_{chr(97 + k)}" for k in range(classes)])
    with path.open("w", encoding="utf-8") as fh:
        fh.write(",".join([*(f"f{j}" for j in range(features)), "label"]) + "\n")
        for start in range(0, rows, 10_000):
            chunk = x[start:start + 10_000]
            for row, name in zip(chunk, names[label[start:start + 10_000]], strict=True):
                fh.write(",".join(f"{v:.4f}" for v in row) + f",{name}\n")
    return path


# ----------------------------------------------------------------------------- sessions
@dataclass
class Run:
    """One session's measurements: marks of (rounds done, hub link bytes, time)."""

    records: list[dict[str, Any]]
    marks: list[tuple[int, int, float]]
    started: float  # epoch 1's start (see the module docstring)
    evals: list[tuple[float, float]] = field(default_factory=list)  # (time, accuracy)
    where: str = "loopback"

    def rounds(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("type") == "round"]

    def time_at(self, rounds: int) -> float:
        """When ``rounds`` rounds were first seen done."""
        return next(t for n, _, t in self.marks if n >= rounds)

    def bytes_at(self, rounds: int) -> int:
        return next(b for n, b, _ in self.marks if n >= rounds)


class Network:
    """The shaped LAN (hub, w1, w2) when namespaces work here, else loopback."""

    def __init__(self, link: str) -> None:
        from benchmarks.lan.net import ShapedLan, netns_available

        self.lan = None
        if link != "loopback" and netns_available():
            self.lan = ShapedLan(["hub", "w1", "w2"]).__enter__()
            self.lan.shape_link(link)
        self.where = f"namespaces, {link} per machine" if self.lan else "loopback (no netns)"

    def popen(self, host: str, argv: list[str], **kw: Any) -> subprocess.Popen[Any]:
        if self.lan is None:
            return subprocess.Popen(argv, **kw)
        return self.lan.popen(host, argv, **kw)

    def hub_address(self) -> str:
        return "127.0.0.1" if self.lan is None else self.lan.address("hub")

    def close(self) -> None:
        if self.lan is not None:
            self.lan.__exit__(None, None, None)


def session(net: Network, work: Path, data: Sequence[str], model: str, rounds: int,
            extra: Sequence[str] = (), timeout_s: float = 1800, lr: float = LR) -> Run:
    """A host and two joins until the session ends; rounds and link bytes sampled."""
    out, port = work / "out", free_ports()
    work.mkdir(parents=True, exist_ok=True)
    env = home_env(work / "home", OMP_NUM_THREADS="1", PYTHONPATH=str(REPO),
                   COMPUTESHARE_PIN=PIN, COMPUTESHARE_DATA_DIR=str(work.parent / "datasets"))
    bind = "0.0.0.0" if net.lan else "127.0.0.1"
    hub = net.popen("hub", [*CLI, "host", *data, "--model", model, "--workers", "2",
                            "--rounds", str(rounds), "--batch-size", str(BATCH), "--lr", str(lr),
                            "--preset", "lan", "--no-balance", "--bind", bind, "--port",
                            str(port), "--no-advertise", "--out", str(out), *extra],
                    env=env, stdout=subprocess.DEVNULL, stderr=(work / "hub.err").open("wb"))
    while not (out / "session.json").exists():
        if hub.poll() is not None:
            raise RuntimeError(f"host exited {hub.returncode}: {_tail(work / 'hub.err')}")
        time.sleep(POLL_S)
    counter = net.lan.counter("hub") if net.lan else None
    launched, base = time.monotonic(), counter.read() if counter else 0
    workers = [net.popen(f"w{i}", [*CLI, "join", f"{net.hub_address()}:{port}", "--device",
                                   "cpu", "--threads", "1", "--quiet", "--name", f"w{i}",
                                   "--wait", "60"],
                         env={**env, "XDG_CACHE_HOME": str(work / f"cache{i}")},
                         stdout=subprocess.DEVNULL, stderr=(work / f"w{i}.err").open("wb"))
               for i in (1, 2)]
    lines, marks, evals = Lines(out / "metrics.jsonl"), [], []
    started, seen, said = None, 0, Said(work / "hub.err")
    try:
        while hub.poll() is None:
            if time.monotonic() - launched > timeout_s:
                raise RuntimeError(f"session over {timeout_s:.0f} s")
            records, now = lines.read(), time.monotonic()
            moved = counter.read() - base if counter else 0
            if started is None and said.count(" joined") >= 2:
                started = now
            marks.append((sum(1 for r in records if r.get("type") == "round"), moved, now))
            evals += [(now, r["accuracy"]) for r in records[seen:] if r.get("type") == "eval"]
            seen = len(records)
            time.sleep(POLL_S)
    finally:
        stop([hub, *workers], signal.SIGTERM)
        if counter:
            counter.close()
    if hub.returncode != 0:
        raise RuntimeError(f"host exited {hub.returncode}: {_tail(work / 'hub.err')}")
    records = Lines(out / "metrics.jsonl").read()
    marks.append((sum(1 for r in records if r.get("type") == "round"),
                  marks[-1][1] if marks else 0, time.monotonic()))
    return Run(records, marks, started or launched, evals, net.where)


class Said:
    """A log file read as it grows, for a phrase."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.tail, self.counts = path, 0, b"", {}

    def count(self, phrase: str) -> int:
        """How many times ``phrase`` was said so far."""
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        self.offset += len(data)
        key = phrase.encode()
        text, self.tail = self.tail + data, (self.tail + data)[-(len(key) - 1):]
        self.counts[phrase] = self.counts.get(phrase, 0) + text.count(key)
        return self.counts[phrase]


def _tail(path: Path, size: int = 1500) -> str:
    try:
        return path.read_bytes()[-size:].decode(errors="replace")
    except OSError:
        return ""


# ----------------------------------------------------------------------------- (a) images
def bench_images(net: Network, work: Path, count: int, size: int, epochs: int,
                 models: Path) -> str:
    """Per epoch: bytes per round by purpose and on the link, samples/s."""
    from computeshare_desktop.data.prepared import prepare_folder

    began = time.monotonic()
    root = write_images(work / "images", count, size)
    log(f"images: {count} JPEGs at {size} px written in {time.monotonic() - began:.0f} s")
    os.environ["COMPUTESHARE_DATA_DIR"] = str(work / "datasets")
    began = time.monotonic()
    train = prepare_folder(root).train  # the hub finds it in the cache and starts at once
    log(f"images: prepared in {time.monotonic() - began:.0f} s; {len(train)} to train")
    per_round = 2 * BATCH
    epoch = math.ceil(len(train) / 2 / BATCH)  # rounds in one pass over a worker's shard
    run = session(net, work / "images-session", ["--dataset", str(root)],
                  f"{models}:ImageNet", epochs * epoch, ("--eval-every", "0"), lr=IMAGE_LR)
    rounds = run.rounds()
    rows, rates = [], []
    for e in range(epochs):
        span = rounds[e * epoch:(e + 1) * epoch]
        start = run.started if e == 0 else run.time_at(e * epoch)
        wall = run.time_at((e + 1) * epoch) - start
        link = run.bytes_at((e + 1) * epoch) - (0 if e == 0 else run.bytes_at(e * epoch))
        rate = len(span) * per_round / wall
        rates.append(rate)
        setup = f"{run.time_at(1) - run.started:.1f}" if e == 0 else ""
        rows.append([e + 1, len(span), _mb(sum(r["data_bytes"] for r in span) / len(span)),
                     _mb(sum(r["model_bytes"] for r in span) / len(span)),
                     _mb(sum(r["update_bytes"] for r in span) / len(span)),
                     _mb(link / len(span)) if net.lan else "n/a",
                     f"{median(r['seconds'] for r in span) * 1e3:.0f}", f"{wall:.1f}", setup,
                     f"{rate:.0f}", f"{rate / rates[0]:.2f}x"])
    shard_mb = sum(r["data_bytes"] for r in rounds) / 1e6
    return "\n".join([
        f"**(a) Image folder**: {count} JPEGs, {size}x{size} RGB, 10 classes ({len(train)} to "
        f"train, {epoch} rounds per epoch of 2 x {BATCH}), ImageNet (3 strided convolutions), "
        f"2 workers, {run.where}; data moved in all: {shard_mb:.1f} MB.", "",
        table(["epoch", "rounds", "data MB/round", "model MB/round", "update MB/round",
               "hub link MB/round", "median round ms", "wall s", "of which before round 1 s",
               "samples/s", "vs epoch 1"], rows, "rrrrrrrrrrr")])


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.3f}"


# ----------------------------------------------------------------------------- (b) prepare
PREPARE = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    from computeshare_desktop.data.prepared import prepare_folder
    import torch, PIL.Image
    if sys.argv[1] == "prepare":
        began = time.perf_counter()
        prepared = prepare_folder(Path(sys.argv[2]), cache_dir=Path(sys.argv[3]))
        print(time.perf_counter() - began, len(prepared.train) + len(prepared.test))
    else:
        print(0.0, 0)
''')


def child(args: Sequence[str]) -> tuple[float, int, float]:
    """A child Python running PREPARE: (seconds it reports, images, peak RSS in MB)."""
    proc = subprocess.Popen([sys.executable, "-c", PREPARE, *args], stdout=subprocess.PIPE,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"prepare child exited {proc.returncode}")
    seconds, images = out.split()
    return float(seconds), int(images), usage.ru_maxrss / 1024  # Linux: kB


def bench_prepare(work: Path, count: int, size: int) -> str:
    began = time.monotonic()
    root = write_images(work / "small", count, size, fmt="PNG")
    log(f"prepare: {count} PNGs at {size} px written in {time.monotonic() - began:.0f} s")
    cache = work / "prepare-cache"
    _, _, idle_mb = child(["import"])
    first_s, images, first_mb = child(["prepare", str(root), str(cache)])
    again_s, _, again_mb = child(["prepare", str(root), str(cache)])
    size_mb = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) / 1e6
    return "\n".join([
        f"**(b) Preparation**: {count} PNGs, {size}x{size} RGB, 10 classes, prepared by "
        f"prepare_folder in a child process (1 thread); the cache holds {size_mb:.0f} MB.", "",
        table(["run", "images", "seconds", "images/s", "peak RSS MB",
               "RSS above an idle child MB"],
              [["first (decode)", images, f"{first_s:.1f}", f"{images / first_s:.0f}",
                f"{first_mb:.0f}", f"{first_mb - idle_mb:.0f}"],
               ["second (cache hit)", images, f"{again_s:.2f}", f"{images / again_s:.0f}",
                f"{again_mb:.0f}", f"{again_mb - idle_mb:.0f}"],
               ["idle (imports only)", 0, "", "", f"{idle_mb:.0f}", "0"]], "lrrrrr")])


# ----------------------------------------------------------------------------- (c) table
def plain_loop(model: str, spec: str, steps: int, every: int
               ) -> tuple[list[tuple[float, int, float]], Any]:
    """The model alone on the same split: the hub's initial weights, 2 x BATCH samples a
    step from the two shards' streams, SGD at the hub's rate; (training seconds, step,
    test accuracy) every ``every`` steps."""
    import torch

    from computeshare_desktop.data.prepared import load_data
    from computeshare_desktop.evaluation import batch_loss, evaluate
    from computeshare_desktop.hub.config import HubConfig
    from computeshare_desktop.hub.user_model import build_hub_model
    from computeshare_desktop.sampling import shard_indices, stream_positions

    torch.set_num_threads(1)
    train, test = load_data(spec, label="label")
    net = build_hub_model(HubConfig(model=model, dataset=spec, seed=0), train.info)
    opt = torch.optim.SGD(net.parameters(), lr=2 * LR, momentum=0.9)
    shards = [shard_indices(len(train), 2, s, 0) for s in range(2)]
    points, busy = [], 0.0
    for step in range(1, steps + 1):
        began = time.perf_counter()
        net.train()
        idx = torch.cat([shard[stream_positions(len(shard), 0, s, (step - 1) * BATCH, BATCH)]
                         for s, shard in enumerate(shards)])
        opt.zero_grad()
        batch_loss(net, train.images[idx], train.labels[idx], train.info).backward()
        opt.step()
        busy += time.perf_counter() - began
        if step % every == 0 or step == steps:
            points.append((busy, step, evaluate(net, test)[0]))
    return points, train


def bench_table(net: Network, work: Path, rows: int, features: int, models: Path,
                every: int = 10) -> str:
    began = time.monotonic()
    csv = write_table(work / "table.csv", rows, features)
    log(f"table: {rows} x {features} CSV written in {time.monotonic() - began:.0f} s")
    os.environ["COMPUTESHARE_DATA_DIR"] = str(work / "datasets")
    model = f"{models}:TableNet"
    steps = math.ceil(rows * 0.9 / (2 * BATCH))  # one epoch of the training split
    points, train = plain_loop(model, str(csv), steps, every)
    final = points[-1][2]
    target = 0.95 * final
    alone = next((t, s) for t, s, a in points if a >= target)
    log(f"table: plain loop {100 * final:.2f}% after {steps} steps; target "
        f"{100 * target:.2f}% at step {alone[1]}")
    run = session(net, work / "table-session", ["--dataset", str(csv), "--label", "label"],
                  model, steps, ("--eval-every", str(every)))
    reached = next(((t, i) for i, (t, a) in enumerate(run.evals) if a >= target), None)
    hub_final = next(r["accuracy"] for r in run.records
                     if r.get("type") == "eval" and r.get("final"))
    two = f"{reached[0] - run.started:.1f}" if reached else "not reached"
    setup = f"{run.time_at(1) - run.started:.1f}"
    two_steps = str(every * (reached[1] + 1)) if reached else ""
    return "\n".join([
        f"**(c) Table**: {rows} rows x {features} features, 5 text labels ({len(train)} to "
        f"train), TableNet ({features}-64-5 MLP), global batch 2 x {BATCH}, SGD lr "
        f"{2 * LR:g} momentum 0.9, one epoch ({steps} steps), accuracy every {every} steps; "
        f"2 workers on {run.where}. Target: 95% of the plain loop's final accuracy.", "",
        table(["", "final accuracy", "target", "steps to target", "seconds to target",
               "of which before step 1"],
              [["plain loop (1 process, training time only)", f"{100 * final:.2f}%",
                f"{100 * target:.2f}%", alone[1], f"{alone[0]:.2f}", "0"],
               ["2 workers (from the second Welcome)", f"{100 * hub_final:.2f}%",
                f"{100 * target:.2f}%", two_steps, two, setup]], "lrrrrr")])


# ----------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--parts", default="images,prepare,table",
                   help="which parts, comma-separated (images, prepare, table)")
    p.add_argument("--images", type=int, default=20_000, help="images in part (a)")
    p.add_argument("--size", type=int, default=96, help="their side in pixels")
    p.add_argument("--epochs", type=int, default=3, help="epochs of each shard in part (a)")
    p.add_argument("--prep-images", type=int, default=100_000, help="images in part (b)")
    p.add_argument("--prep-size", type=int, default=32, help="their side in pixels")
    p.add_argument("--rows", type=int, default=100_000, help="rows of the table (c)")
    p.add_argument("--features", type=int, default=50, help="its feature columns")
    p.add_argument("--link", default="100mbit",
                   help="each machine's link (100mbit, 1gbit, 20mbit, unshaped, loopback)")
    p.add_argument("--quick", action="store_true",
                   help="scaled down: 4,000 images, 20,000 to prepare, 20,000 rows")
    p.add_argument("--report", default="-", help="where the tables go (- : stdout)")
    args = p.parse_args(argv)
    if args.quick:
        args.images, args.prep_images, args.rows = 4000, 20_000, 20_000
    parts = set(args.parts.split(","))
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, exit_on_signal)
    began, sections = time.monotonic(), []
    info = machine()
    net = Network(args.link) if parts & {"images", "table"} else None
    try:
        with tempfile.TemporaryDirectory(prefix="cs-bench-data-") as tmp:
            work = Path(tmp)
            models = work / "models.py"
            models.write_text(MODELS, encoding="utf-8")
            if "images" in parts and net is not None:
                sections.append(bench_images(net, work, args.images, args.size, args.epochs,
                                             models))
                log(sections[-1])
            if "prepare" in parts:
                sections.append(bench_prepare(work, args.prep_images, args.prep_size))
                log(sections[-1])
            if "table" in parts and net is not None:
                sections.append(bench_table(net, work, args.rows, args.features, models))
                log(sections[-1])
    finally:
        if net is not None:
            net.close()
    header = (f"bench_data on {info['cpu']} ({info['nproc']} cores), torch {info['torch']}, "
              f"computeshare {info['computeshare']}; {time.monotonic() - began:.0f} s in all; "
              f"`{' '.join(['python -m benchmarks.bench_data', *(argv or sys.argv[1:])])}`")
    write_text("\n\n".join([header, *sections]) + "\n", args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
