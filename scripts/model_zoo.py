"""Every torchvision classifier through a session's whole path, each checked against the
same training step on the original (``testbed/zoo.py``), as CI's last step.

For each architecture of ``torchvision.models.list_models(module=torchvision.models)``:
the hub builds ``torchvision:ARCH`` for a small dataset (CIFAR-10's 3×32×32 images and 10
classes; where an architecture refuses 32 px, at the size the hub's own message names,
as its user would), exports and checks it, a worker accepts the bytes, and one step on a
batch of 2 is compared with the original's. Each model runs in a fresh process, at most
``--jobs`` at a time and within ``--memory-gb`` by an estimate from its parameter count,
largest first.

    python -m scripts.model_zoo                       # all of them (~N minutes on 2 cores)
    python -m scripts.model_zoo --only resnet18,vit_b_32 --out build/model-zoo

Writes OUT/model_zoo.md and OUT/model_zoo.json. Exit status: 0 when every row equals the
local step or is refused by the hub with a message that names the layer (module path and
type), or the model's size and ``--train-only``; 1 otherwise (a row that differs, fails,
or is refused without saying what to change).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("model_zoo")

DATASET = "cifar10"  # 3×32×32, 10 classes: the small dataset every model is sized to
BATCH = 2  # samples in the compared step (the export's example batch is 2 as well)
TIMEOUT_S = 900  # one model, build to comparison
POLL_S = 0.5  # how often the memory of the running models is read
# A model's weights exist about four times at once (the original, its gradients, the
# worker's copy and its gradients, or the hub's check's copy), beside ~1 GB of torch;
# twice for one the hub refuses for its size before exporting (built, then checked).
COPIES, REFUSED_COPIES, BASE_GB = 4, 2, 1.0
# A refusal a person can act on: it names the layer ("layer features.3: nn.Conv2d: ..."),
# or it is the whole model's size, and says how to train part of it.
ACTIONABLE = re.compile(r"layer [^:\n]+: [^:\n]+: |values to train, more than .*--train-only")
HINTED_SIZE = re.compile(r"add --image-size (\d+)")


@dataclass(frozen=True, slots=True)
class Row:
    """One architecture's line of the table."""

    model: str
    size: int  # the image size it ran at (0: it did not get that far)
    outcome: str  # equal, refused, differs, failed
    detail: str
    parameters: int
    ops: int
    seconds: float
    peak_gb: float  # its process's peak resident memory

    @property
    def passes(self) -> bool:
        return self.outcome == "equal" or (self.outcome == "refused"
                                           and ACTIONABLE.search(self.detail) is not None)


# ---------------------------------------------------------------- one model (a child)
def run_one(arch: str, batch: int) -> Row:
    """``torchvision:ARCH`` built, shipped, accepted and stepped (in this process)."""
    from testbed.zoo import through_session

    began = time.perf_counter()
    try:
        model, config, train_set = _hub_build(arch, batch)
    except Exception as err:  # any failure to build is this row's, never the table's
        return Row(arch, 0, "failed", f"build: {type(err).__name__}: {err}"[:500], 0, 0,
                   time.perf_counter() - began, _peak_gb())
    try:
        result = through_session(arch, model, config, train_set, batch=batch, seed=0)
    except Exception as err:  # a worker refusing what the hub accepted, say
        return Row(arch, train_set.info.height, "failed", f"{type(err).__name__}: {err}"[:500],
                   0, 0, time.perf_counter() - began, _peak_gb())
    return Row(arch, train_set.info.height, result.outcome, result.detail,
               result.parameters, result.ops, time.perf_counter() - began, _peak_gb())


def _hub_build(arch: str, batch: int):  # type: ignore[no-untyped-def]
    """The hub's model for ``arch`` on the small dataset (at the size its refusal of
    32 px names), its config and a training set of random images of that size."""
    from computeshare_desktop.data import dataset_info
    from computeshare_desktop.errors import ConfigError
    from computeshare_desktop.hub.config import HubConfig
    from computeshare_desktop.hub.user_model import build_hub_model

    config = HubConfig(model=f"torchvision:{arch}", dataset=DATASET)
    info = dataset_info(DATASET)
    try:
        model = build_hub_model(config, info)
    except ConfigError as refused:
        hinted = HINTED_SIZE.search(str(refused))
        if hinted is None:
            raise
        size = int(hinted.group(1))
        info = dataclasses.replace(info, height=size, width=size)
        config = dataclasses.replace(config, image_size=size)
        model = build_hub_model(config, info)
    return model, config, _random_images(info, batch)


def _random_images(info, count: int):  # type: ignore[no-untyped-def]
    import torch

    from computeshare_desktop.data import ArrayDataset

    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (count, *info.shape), dtype=torch.uint8,
                           generator=generator)
    labels = torch.randint(0, info.num_classes, (count,), generator=generator)
    return ArrayDataset(images, labels, info)


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


# ---------------------------------------------------------------- the table (the parent)
@dataclass(slots=True)
class Running:
    arch: str
    process: subprocess.Popen[str]
    started: float
    cost_gb: float


def estimate_gb(arch: str) -> float:
    """The memory ``arch``'s process will need, from torchvision's parameter count."""
    import torchvision.models

    from computeshare_desktop.protocol.graphs import MAX_TRAINABLE_NUMEL

    try:
        weights = list(torchvision.models.get_model_weights(arch))
    except ValueError:  # not torchvision's: its own process will say so
        weights = []
    params = weights[0].meta["num_params"] if weights else 50_000_000
    copies = REFUSED_COPIES if params > MAX_TRAINABLE_NUMEL else COPIES
    return BASE_GB + copies * 4 * params / 1e9


def run_all(archs: Sequence[str], jobs: int, memory_gb: float, batch: int,
            logs: Path) -> tuple[list[Row], float]:
    """Every ``arch`` in a process of its own (what it prints to stderr: ``logs/ARCH.log``);
    the rows and the peak of the processes' summed resident memory (GB)."""
    logs.mkdir(parents=True, exist_ok=True)
    queue = sorted(archs, key=estimate_gb, reverse=True)  # the largest first: no long tail
    costs = {arch: estimate_gb(arch) for arch in queue}
    running: list[Running] = []
    rows: list[Row] = []
    peak = 0.0
    while queue or running:
        while queue and len(running) < jobs and (
                not running or sum(r.cost_gb for r in running) + costs[queue[0]] <= memory_gb):
            arch = queue.pop(0)
            threads = _threads(costs[arch], jobs, memory_gb)
            running.append(Running(arch, _spawn(arch, batch, logs / f"{arch}.log", threads),
                                   time.monotonic(), costs[arch]))
        time.sleep(POLL_S)
        peak = max(peak, sum(_rss_gb(r.process.pid) for r in running))
        for item in list(running):
            row = _finished(item)
            if row is not None:
                running.remove(item)
                rows.append(row)
                log.info("%-20s %-8s %6.1f s  %s", row.model, row.outcome, row.seconds,
                         row.detail.splitlines()[0][:100] if row.detail else "")
    return sorted(rows, key=lambda r: r.model), peak


def _threads(cost_gb: float, jobs: int, memory_gb: float) -> int:
    """Each model's share of the processors; all of them for one that runs alone (it
    needs over half the memory), since more threads than cores slow everyone down."""
    cpus = os.cpu_count() or 1
    return cpus if cost_gb > memory_gb / 2 else max(1, cpus // jobs)


def _spawn(arch: str, batch: int, log_file: Path, threads: int) -> subprocess.Popen[str]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}  # torch's threads, at its start
    with log_file.open("w", encoding="utf-8") as errors:  # the child keeps its own copy
        return subprocess.Popen(
            [sys.executable, "-m", "scripts.model_zoo", "--one", arch, "--batch", str(batch)],
            stdout=subprocess.PIPE, stderr=errors, text=True, env=env,
            cwd=Path(__file__).resolve().parents[1])


def _finished(item: Running) -> Row | None:
    """The row of a model whose process ended (or ran out of time), else None."""
    elapsed = time.monotonic() - item.started
    if item.process.poll() is None:
        if elapsed < TIMEOUT_S:
            return None
        item.process.kill()
        item.process.communicate(timeout=30)
        return Row(item.arch, 0, "failed", f"no result within {TIMEOUT_S} s", 0, 0,
                   elapsed, 0.0)
    out, _ = item.process.communicate(timeout=30)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if item.process.returncode != 0 or not lines:
        return Row(item.arch, 0, "failed", f"its process exited with status "
                   f"{item.process.returncode}", 0, 0, elapsed, 0.0)
    return Row(**json.loads(lines[-1]))


def _rss_gb(pid: int) -> float:
    """A process's resident memory now (0 where /proc cannot tell)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(found.group(1)) / 2**20 if found else 0.0


# ---------------------------------------------------------------- the report
def markdown(rows: Sequence[Row]) -> str:
    """The table as README.md shows it."""
    lines = ["| model | image size | parameters | ops | result | time (s) | peak GB |",
             "|---|---:|---:|---:|---|---:|---:|"]
    for row in rows:
        result = "trains (equal)" if row.outcome == "equal" else \
            f"{row.outcome}: {_one_line(row.detail)}"
        lines.append(f"| {row.model} | {row.size} | {row.parameters:,} | {row.ops} | "
                     f"{result} | {row.seconds:.0f} | {row.peak_gb:.1f} |")
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")[:300]


def write(rows: Sequence[Row], out: Path, summary: dict[str, object]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "model_zoo.md").write_text(markdown(rows), encoding="utf-8")
    data = {"summary": summary, "rows": [dataclasses.asdict(r) for r in rows]}
    (out / "model_zoo.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated architectures")
    parser.add_argument("--jobs", type=int, default=2, help="models at a time")
    parser.add_argument("--memory-gb", type=float, default=12.0,
                        help="what the models running at once may use together")
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--out", type=Path, default=Path("build/model-zoo"))
    parser.add_argument("--one", default="", help=argparse.SUPPRESS)  # a child's model
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(dataclasses.asdict(run_one(args.one, args.batch))), flush=True)
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from computeshare_desktop.models.vision import classifiers

    archs = [a.strip() for a in args.only.split(",") if a.strip()] or list(classifiers())
    began = time.monotonic()
    rows, peak = run_all(archs, args.jobs, args.memory_gb, args.batch, args.out / "logs")
    wall = time.monotonic() - began
    bad = [r.model for r in rows if not r.passes]
    summary = {"models": len(rows), "equal": sum(r.outcome == "equal" for r in rows),
               "refused": sum(r.outcome == "refused" for r in rows), "failing": bad,
               "wall_s": round(wall, 1), "peak_gb": round(peak, 1), "jobs": args.jobs,
               "cpus": os.cpu_count()}
    write(rows, args.out, summary)
    log.info("%d models in %.0f s (peak %.1f GB): %d equal, %d refused; %s", len(rows),
             wall, peak, summary["equal"], summary["refused"],
             f"FAILING: {', '.join(bad)}" if bad else "every row passes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
