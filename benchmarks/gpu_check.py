"""The CUDA worker, checked: a GPU worker beside a CPU worker, against a plain torch loop.

Each session is a hub (``computeshare_desktop.host``, the Python front end of the same
session service as ``computeshare host``, run here so that its events give each worker's
device, samples and batch) and two real ``computeshare join`` processes on 127.0.0.1: one
``--device cuda``, one ``--device cpu`` with one torch thread, both in the probe of
``benchmarks.gpu_parts`` (the real ``join``, its compute instrumented). The data is an
image folder this script draws (each class a coloured shape on noise), the preset the
default (``auto``), balancing on. The sessions:

* ``torchvision``: ``torchvision:resnet18``, ``--precision auto`` (bf16 on a GPU with it);
* ``builtin``: the built-in ``resnet18``, ``--precision auto``;
* ``own-pt2``: someone's own model saved with ``torch.export.save`` (``gpu_parts.OwnNet``);
* ``fp16``: ``torchvision:resnet18``, ``--precision fp16`` (the GPU's loss scaler).

After each, a plain torch loop trains the same model at the GPU worker's batch and
precision on the same device, and the worker's samples/s is set against it (the goal: no
more than 10% below). It prints a table, writes ``OUT/SESSION.json`` for each session and
``OUT/gpu_check.json`` for all, and exits 1, naming each, on a CUDA error, a host-device
synchronisation inside a step's forward and backward (CUDA), a NaN, a worker that fell back
to the CPU or computed in another precision than its device should, a hub that evaluated
off the GPU, or a session below its accuracy bar.

    python -m benchmarks.gpu_check                  # CUDA: 4,000 images of 64 px, 200 rounds
    python -m benchmarks.gpu_check --device cpu     # the dry run: small, CPU only (~1 min)

Without CUDA the dry run is what runs: 320 images of 32 px, 4 classes, small models
(``torchvision:shufflenet_v2_x1_0``; ``simplenet`` for the built-in and fp16 sessions), 30
rounds, both workers on the CPU (``fp16`` then computes in fp32, as the worker says), and a
bar of 50% (chance: 25%). ``--keep`` keeps every session's logs and hub folder in OUT/work,
``--sessions`` runs some of them (a rerun on a GPU machine's short lease).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from benchmarks import gpu_parts
from benchmarks._common import (exit_on_signal, free_ports, home_env, kill, machine, median,
                                read_jsonl, table)

PIN = "531246"
REPO = Path(__file__).resolve().parents[1]
CUDA_ERRORS = ("CUDA error", "CUBLAS_STATUS", "CUDNN_STATUS", "cuDNN error",
               "device-side assert", "illegal memory access", "out of memory")
GOAL = 0.10  # the bound on our overhead against the plain loop
END_GRACE_S = 20.0  # after the hub's end, for a worker to hear it and exit
NAMES = {"main": "worker-1", "cpu": "worker-2"}  # --device DEVICE; --device cpu, 1 thread


@dataclass(frozen=True, slots=True)
class Size:
    """How big the sessions are on one kind of machine."""

    images: int
    side: int
    classes: int
    rounds: int
    test_fraction: float
    bar: float  # the final test accuracy every session must reach
    loop_steps: int
    torchvision: str  # the torchvision classifier of the torchvision session
    builtin: str
    fp16: str  # the model of the fp16 session
    timeout_s: float  # one session, its workers' start included


GPU = Size(images=4000, side=64, classes=10, rounds=200, test_fraction=0.1, bar=0.8, loop_steps=50,
           torchvision="torchvision:resnet18", builtin="resnet18",
           fp16="torchvision:resnet18", timeout_s=300)
# Chance is 25%: 30 rounds of 2 x 32 images take the small models past 50% (~90% seen).
DRY = Size(images=320, side=32, classes=4, rounds=30, test_fraction=0.2, bar=0.5,
           loop_steps=5, torchvision="torchvision:shufflenet_v2_x1_0", builtin="simplenet",
           fp16="simplenet", timeout_s=120)


@dataclass(frozen=True, slots=True)
class Plan:
    """One session: its name, model and precision."""

    name: str
    model: str
    precision: str


SESSIONS = ("torchvision", "builtin", "own-pt2", "fp16")


def plans(size: Size, own: Path) -> list[Plan]:
    return [Plan("torchvision", size.torchvision, "auto"),
            Plan("builtin", size.builtin, "auto"),
            Plan("own-pt2", str(own), "auto"),
            Plan("fp16", size.fp16, "fp16")]


def log(msg: str) -> None:
    print(f"[gpu_check] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- one session
def spawn_worker(port: int, device: str, name: str, folder: Path,
                 threads: int) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """A ``computeshare join`` process in the probe; (process, its report, its log)."""
    report, logfile = folder / f"{name}.probe.json", folder / f"{name}.log"
    args = [sys.executable, "-m", "benchmarks.gpu_parts", "probe", str(report), "join",
            f"127.0.0.1:{port}", "--pin", PIN, "--device", device, "--name", name,
            "--quiet", "--wait", "60", "--come-back", "0", "--cache-size", "0",
            "--no-pause-on-battery", *(("--threads", str(threads)) if threads else ())]
    with open(logfile, "wb") as fh:
        proc = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO,
                                start_new_session=True,
                                env=home_env(os.environ["COMPUTESHARE_HOME"],
                                             PYTHONUNBUFFERED="1"))
    return proc, report, logfile


def run_session(plan: Plan, size: Size, device: str, data: Path, root: Path) -> dict[str, Any]:
    """The hub here and its two worker processes, until the session ends; what it gave."""
    from computeshare_desktop import host
    from computeshare_desktop.events import ModeChanged, RoundClosed

    folder = root / plan.name
    folder.mkdir(parents=True)
    port = free_ports()
    began = time.monotonic()
    # The workers first (--wait): their imports overlap the hub's build and export.
    workers = {"main": spawn_worker(port, device, NAMES["main"], folder,
                                    0 if device == "cuda" else 1),
               "cpu": spawn_worker(port, "cpu", NAMES["cpu"], folder, 1)}
    run = None
    try:
        run = host(plan.model, str(data), rounds=size.rounds, workers=2, pin=PIN, port=port,
                   bind="127.0.0.1", out_dir=folder / "hub", advertise=False, quiet=True,
                   precision=plan.precision, test_fraction=size.test_fraction)
        marks = {"listening_s": time.monotonic() - began}
        try:
            result = run.wait(size.timeout_s)
        except TimeoutError as exc:  # say where each worker was
            tails = {name: logfile.read_text(errors="replace")[-300:]
                     for name, (_, _, logfile) in workers.items()}
            raise RuntimeError(f"{exc}; the workers' last lines: {tails}") from None
        marks["ended_s"] = time.monotonic() - began
        ends = {role: worker_end(proc) for role, (proc, _, _) in workers.items()}
        marks["workers_ended_s"] = time.monotonic() - began
    finally:
        if run is not None and run.running:
            run.stop()
        for proc, _, _ in workers.values():
            if proc.poll() is None:
                kill(proc)
    # The session's events, kept for events() until read: all of them, now it has ended.
    events = list(run.events())
    rounds = [e for e in events if isinstance(e, RoundClosed)]
    last = rounds[-1] if rounds else None
    modes = [e.preset for e in events if isinstance(e, ModeChanged)]
    session = run._service.session  # the hub's own choice of evaluation device
    record: dict[str, Any] = {
              "session": plan.name, "model": plan.model, "precision": plan.precision,
              "rounds": result.metrics.rounds, "wall_s": round(time.monotonic() - began, 1),
              "training_s": round(result.metrics.seconds, 2),
              "hub_eval_device": str(session.eval_device) if session else None,
              "presets_chosen": modes, "bar": size.bar,
              **{k: round(v, 1) for k, v in marks.items()}}
    record.update(hub_figures(folder / "hub"))
    record["workers"] = {role: worker_figures(role, last, report, logfile, *ends[role])
                         for role, (_, report, logfile) in workers.items()}
    return record


def worker_end(proc: subprocess.Popen[bytes]) -> tuple[int, bool]:
    """A worker's exit code once the hub has ended, and whether it had to be stopped: a
    worker that missed the hub's last word keeps trying it (``--give-up``, 120 s)."""
    try:
        return proc.wait(END_GRACE_S), False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # the probe writes its report on the way out
    try:
        return proc.wait(10), True
    except subprocess.TimeoutExpired:
        kill(proc)
        return proc.returncode, True


def hub_figures(out: Path) -> dict[str, Any]:
    """Bytes per round, the losses' health and the final accuracy, from metrics.jsonl."""
    records = read_jsonl(out / "metrics.jsonl")
    rounds = [r for r in records if r.get("type") == "round"]
    final = next((r for r in records if r.get("type") == "eval" and r.get("final")), None)
    return {"round_records": len(rounds),
            "bytes_per_round": median([r["bytes_in"] + r["bytes_out"] for r in rounds])
            if rounds else None,
            "nonfinite_round_losses": sum(not math.isfinite(r["loss"]) for r in rounds),
            "rejected": sum(r["rejected"] for r in rounds),
            "accuracy": final["accuracy"] if final else None}


def worker_figures(role: str, last: Any, report: Path, logfile: Path, code: int,
                   stopped: bool) -> dict[str, Any]:
    """One worker as the hub saw it at the last round, and as its probe saw itself."""
    info = next((w for w in (last.workers if last else ()) if w.name == NAMES[role]), None)
    batches = sum(w.batch for w in last.workers) if last else 0
    probe = json.loads(report.read_text(encoding="utf-8")) if report.exists() else None
    text = logfile.read_text(encoding="utf-8", errors="replace")
    return {"exit_code": code, "stopped_after_end": stopped,
            "hub_says_device": info.device if info else None,
            "samples_per_s": info.samples / info.compute_s if info and info.compute_s else None,
            "batch": info.batch if info else None,
            "share": info.batch / batches if info and batches else None,
            "probe": probe, "cuda_errors": [m for m in CUDA_ERRORS if m in text],
            "log_tail": text[-600:]}


def loop_figures(record: dict[str, Any], size: Size, data: Path) -> dict[str, Any]:
    """The plain loop at the main worker's batch, precision and device; our overhead."""
    main = record["workers"]["main"]
    probe = main["probe"] or {}
    on = probe.get("device") or "cpu"
    loop = gpu_parts.plain_loop(record["model"], str(data), batch=main["batch"] or 32,
                                precision=record["precision"], device=on,
                                steps=size.loop_steps, test_fraction=size.test_fraction)
    ours = main["samples_per_s"]
    return {"loop": asdict(loop),
            "overhead": 1 - ours / loop.samples_per_s if ours else None}


# ---------------------------------------------------------------------------- checks
def failures(record: dict[str, Any], device: str) -> list[str]:
    """What is wrong with one session, a line each ([]: it passed)."""
    from computeshare_desktop.devices import choose_precision, has_bf16

    name, bad = record["session"], []
    acc = record["accuracy"]
    if acc is None or not acc >= record["bar"]:
        bad.append(f"accuracy {acc} below the bar {record['bar']}")
    if record["nonfinite_round_losses"]:
        bad.append(f"{record['nonfinite_round_losses']} rounds with a NaN or infinite loss")
    if device == "cuda" and not str(record["hub_eval_device"]).startswith("cuda"):
        bad.append(f"the hub evaluated on {record['hub_eval_device']}, not the GPU")
    for role, w in record["workers"].items():
        probe, who = w["probe"], f"worker {role}"
        if w["exit_code"] != 0 and not w["stopped_after_end"]:
            bad.append(f"{who} exited with {w['exit_code']}: {w['log_tail'][-200:]!r}")
        if w["cuda_errors"]:
            bad.append(f"{who}: CUDA error in its log ({', '.join(w['cuda_errors'])})")
        if probe is None:
            bad.append(f"{who}: no probe report")
            continue
        wanted = device if role == "main" else "cpu"
        if not str(probe["device"]).startswith(wanted):
            bad.append(f"{who} computed on {probe['device']}, not {wanted} (fell back)")
            continue
        on = torch.device(probe["device"])
        expected, _ = choose_precision(record["precision"], on.type, bf16=has_bf16(on))
        if probe["precision"] != expected:
            bad.append(f"{who} computed in {probe['precision']}, not {expected}")
        if probe["errors"]:
            bad.append(f"{who} raised: {probe['errors'][0]}")
        if probe["nonfinite_losses"]:
            bad.append(f"{who}: {probe['nonfinite_losses']} steps with a NaN loss")
        if probe["syncs"]:
            bad.append(f"{who}: {probe['syncs']} host-device syncs inside its steps, the "
                       f"first: {probe['first_sync']}")
        if not probe["steps"] or not w["samples_per_s"]:
            bad.append(f"{who} computed nothing the hub counted")
    return [f"{name}: {line}" for line in bad]


# ---------------------------------------------------------------------------- report
def _num(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def row(record: dict[str, Any]) -> list[str]:
    main, cpu = record["workers"]["main"], record["workers"]["cpu"]
    probe = main["probe"] or {}
    loop, overhead = record.get("loop") or {}, record.get("overhead")
    return [record["session"], record["model"].rsplit("/", 1)[-1], record["precision"],
            f"{probe.get('device')} {probe.get('precision')}",
            _num(main["samples_per_s"], ".0f"), str((cpu["probe"] or {}).get("device")),
            _num(cpu["samples_per_s"], ".0f"), _num(main["share"], ".0%"),
            _num(record["bytes_per_round"] and record["bytes_per_round"] / 1e6, ".2f"),
            f"{_num(record['accuracy'], '.1%')} (≥ {record['bar']:.0%})",
            str(record["hub_eval_device"]), _num(loop.get("samples_per_s"), ".0f"),
            _num(overhead and 100 * overhead, "+.0f") + (" %" if overhead is not None else ""),
            "n/a (CPU)" if probe.get("syncs") is None else str(probe["syncs"]),
            "yes" if not record["failures"] else "**no**"]


HEADERS = ["session", "model", "--precision", "worker 1: device, precision",
           "worker 1 samples/s", "worker 2 (1 thread)", "worker 2 samples/s",
           "worker 1's share", "MB per round", "accuracy (bar)", "hub evaluates on",
           "plain loop samples/s", "overhead", "syncs in step", "passed"]


def gpu_facts() -> dict[str, str]:
    """The GPU, its driver and CUDA (empty without CUDA)."""
    if not torch.cuda.is_available():
        return {}
    facts = {"gpu": torch.cuda.get_device_name(0), "cuda": str(torch.version.cuda)}
    try:
        facts["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        facts["driver"] = "unknown (no nvidia-smi)"
    return facts


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--device", choices=("cuda", "cpu"), default=None,
                   help="the first worker's device (default: cuda when there is one, else "
                        "the CPU dry run)")
    p.add_argument("--out", type=Path, default=Path("build/gpu-check"),
                   help="folder for the JSON records (default build/gpu-check)")
    p.add_argument("--rounds", type=int, default=0,
                   help="rounds per session (default 200 on CUDA, 20 in the dry run)")
    p.add_argument("--sessions", default=",".join(SESSIONS),
                   help=f"the sessions to run, separated by commas (default: all: "
                        f"{','.join(SESSIONS)})")
    p.add_argument("--keep", action="store_true",
                   help="keep the sessions' folders (logs, hub outputs) in OUT/work")
    args = p.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: error: --device cuda, but torch sees no CUDA device here",
              file=sys.stderr)
        return 2
    size = GPU if device == "cuda" else DRY
    if args.rounds:
        size = Size(**{**asdict(size), "rounds": args.rounds})
    if device == "cpu":
        torch.set_num_threads(1)  # the hub and the loop: as the one-thread workers
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, exit_on_signal)
    began = time.monotonic()
    records: list[dict[str, Any]] = []
    bad: list[str] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cs-gpu-check-") as tmp:
        root = Path(tmp)
        if args.keep:
            root = args.out.resolve() / "work"
            shutil.rmtree(root, ignore_errors=True)
        os.environ["COMPUTESHARE_HOME"] = str(root / "home")  # keys: never the user's
        os.environ["COMPUTESHARE_DATA_DIR"] = str(root / "prepared")
        data = gpu_parts.write_folder(root / "shapes", images=size.images, side=size.side,
                                      classes=size.classes)
        own = gpu_parts.export_own_model(root / "own_net.pt2", channels=3, side=size.side,
                                         classes=size.classes)
        for plan in [pl for pl in plans(size, own) if pl.name in args.sessions.split(",")]:
            log(f"session {plan.name}: {plan.model}, --precision {plan.precision}, "
                f"{size.rounds} rounds")
            try:
                record = run_session(plan, size, device, data, root)
                record.update(loop_figures(record, size, data))
            except Exception as exc:  # a session that could not run is a failure, said
                record = {"session": plan.name, "model": plan.model, "error": repr(exc)}
                bad.append(f"{plan.name}: did not run: {exc}")
                records.append(record)
                continue
            record["failures"] = failures(record, device)
            record["notes"] = [f"{plan.name}: worker {role} was still waiting for the hub "
                               f"{END_GRACE_S:.0f} s after the session ended: stopped"
                               for role, w in record["workers"].items()
                               if w["stopped_after_end"]]
            notes += record["notes"]
            bad += record["failures"]
            records.append(record)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{plan.name}.json").write_text(json.dumps(record, indent=1))
    summary = {"device": device, "size": asdict(size), "machine": machine(),
               "gpu": gpu_facts(), "date": time.strftime("%Y-%m-%d"),
               "seconds": round(time.monotonic() - began, 1), "sessions": records,
               "failures": bad, "notes": notes}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_check.json").write_text(json.dumps(summary, indent=1))
    print(table(HEADERS, [row(r) for r in records if "error" not in r], "lllllrlrrrllrrr"))
    print(f"\n{device} run, {size.images} images of {size.side} px, {size.classes} classes, "
          f"{size.rounds} rounds per session; {summary['seconds']:.0f} s in all; "
          f"JSON in {args.out}")
    for line in notes:
        print(f"NOTE {line}", file=sys.stderr)
    for line in bad:
        print(f"FAILED {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
