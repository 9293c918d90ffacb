"""Soak: a real hub process with 32 simulated workers and churn, for minutes on end.

The hub is a real ``computeshare host`` process on 127.0.0.1 (simplenet on mnist-sample,
zstd, practically endless rounds, no test evaluation unless ``--eval-every``); the workers
are ``SimWorker`` threads of this process (see ``soak_worker``), each running the real
``WorkerDriver``: real ZeroMQ, SPAKE2 pairing, CURVE, shards, long-polls and heartbeats, but
a fixed random gradient (testbed's ``FakeCompute``) instead of compute. Every
``--churn-every`` seconds one worker goes, in turn: goodbye (a newcomer pairs in its place),
goodbye and rejoin with the same key, vanish (the hub reaps it), stall (the watchdog frees
its shard).

Every ``--sample-every`` seconds it reads the hub's VmRSS and open file descriptors from
/proc. The first ``--warmup`` of the run (from the moment every worker trains) is warm-up;
at its end and at the end of the run the churn pauses until all workers train again and
no departed connection lingers, and the hub is measured in that same quiet state. It fails
(exit 1) when RSS grew by ``--max-growth`` % or more between the two, when the hub holds
more descriptors at the end than after warm-up plus ``--fd-slack`` (both defaults from
``benchmarks/targets.py``), when a worker
met an unexpected error, or when the rounds or the churn stalled.

    .venv/bin/python -m benchmarks.soak                      # 10 minutes
    .venv/bin/python -m benchmarks.soak --minutes 1 --report - \
        --results /tmp/soak.jsonl                            # a quick look

Each run appends one JSON line to --results; --report writes the markdown section
(docs/BENCHMARKS-SOAK.md) from that run.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import zmq

from benchmarks._common import CLI, exit_on_signal, home_env, machine, stop, write_text
from benchmarks.soak_report import latest, mb, render
from benchmarks.soak_worker import Leave, Phase, SimWorker, Tally
from benchmarks.targets import SOAK

REPO = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
PIN = "482916"
CHURN = (Leave.BYE, Leave.REJOIN, Leave.VANISH, Leave.BYE, Leave.REJOIN, Leave.STALL)
LINGER_S = 2.0  # after settling: the hub closes a departed peer's connection by then
READINGS = 5  # readings at a quiet point, 0.2 s apart (see quiet_point)


# ----------------------------------------------------------------------------- the hub
class Hub:
    """The ``computeshare host`` process, its logs and its output folder."""

    def __init__(self, root: Path, workers: int, codec: str, eval_every: int) -> None:
        self.root = root
        self.out = root / "session"
        self.stdout, self.stderr = root / "hub.out", root / "hub.err"
        env = home_env(root / "home", PYTHONUNBUFFERED="1")
        cmd = [*CLI, "host", "--pin", PIN,
               "--workers", str(workers), "--rounds", str(10**9),
               "--eval-every", str(eval_every),
               "--codec", codec, "--local-steps", "0", "--bind", HOST, "--port", "0",
               "--no-advertise", "--out", str(self.out), "--quiet", "-v"]
        with open(self.stdout, "wb") as out, open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=REPO,
                                         preexec_fn=_die_with_parent)
        self.pid = self.proc.pid
        try:
            self.port = self._wait_for_port(120.0)
        except BaseException:
            self.stop(10.0)
            raise

    def _wait_for_port(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = re.search(r"hub listening on [\d.]+:(\d+)", self.stdout.read_text())
            if found:
                return int(found.group(1))
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"the hub did not start:\n{self.stderr.read_text()[-2000:]}")

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM (a stop that saves), then SIGKILL; the exit code (None if killed)."""
        return None if stop([self.proc], signal.SIGTERM, timeout_s) else self.proc.returncode

    def log_counts(self) -> dict[str, int]:
        """What the hub's log says happened (it runs with -v)."""
        text = self.stderr.read_text(errors="replace")
        patterns = {"paired": r"paired '", "joined": r" joined on shard ",
                    "left_goodbye": r"left: said goodbye", "left_silent": r"left: silent for",
                    "left_stuck": r"left: missed deadlines",
                    "deadline_closes": r"deadline: closing with",
                    "errors": r"^E |Traceback"}
        return {k: len(re.findall(p, text, re.M)) for k, p in patterns.items()}

    def rounds(self) -> dict[str, Any]:
        """Rounds in metrics.jsonl: how many, how many closed short, their median time."""
        records = []
        with open(self.out / "metrics.jsonl", encoding="utf-8") as fh:
            for line in fh:
                record = json.loads(line)
                if record.get("type") == "round":
                    records.append(record)
        full = max((r["contributors"] for r in records), default=0)
        return {"rounds": len(records), "version": records[-1]["version"] if records else 0,
                "partial": sum(r["contributors"] < full for r in records),
                "median_round_ms": round(1000 * statistics.median(
                    r["seconds"] for r in records), 2) if records else None}


def _die_with_parent() -> None:
    """The hub gets SIGTERM if this process dies, however it dies (Linux)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def measure(pid: int) -> dict[str, Any]:
    """RSS and descriptors of a process, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    field = {k: v.split()[0] for k, v in (line.split(":", 1) for line in status.splitlines())
             if k in ("VmRSS", "VmHWM", "RssAnon", "Threads")}
    kinds: dict[str, int] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed while we looked
            continue
        kind = target.split(":")[0] if target.startswith(("socket:", "pipe:")) else \
            target if target.startswith("anon_inode:") else "file"
        kinds[kind] = kinds.get(kind, 0) + 1
    return {"rss_kb": int(field["VmRSS"]), "hwm_kb": int(field["VmHWM"]),
            "anon_kb": int(field["RssAnon"]), "threads": int(field["Threads"]),
            "fds": sum(kinds.values()), "fd_kinds": kinds}


# ----------------------------------------------------------------------------- the workers
class Swarm:
    """The simulated workers: start, churn, settle, stop."""

    def __init__(self, port: int, workers: int, tally: Tally) -> None:
        self.ctx = zmq.Context(io_threads=2)
        self.port, self.size, self.tally = port, workers, tally
        self.workers: list[SimWorker] = []
        self.started = 0
        self.turn = 0
        for _ in range(workers):
            self.spawn()

    def spawn(self) -> SimWorker:
        self.started += 1
        k = self.started  # each worker its own address, as each machine on a LAN
        worker = SimWorker(self.ctx, HOST, self.port, PIN, f"sim-{k}", self.tally, seed=k,
                           source=f"127.1.{k // 250 % 250}.{k % 250 + 1}")
        worker.start()
        self.workers.append(worker)
        return worker

    def training(self) -> list[SimWorker]:
        return [w for w in self.workers if w.is_alive() and w.leaving is None
                and w.phase is Phase.TRAINING]

    def churn(self) -> str | None:
        """Send one worker away (the next way in CHURN) and start its successor."""
        self.workers = [w for w in self.workers if w.is_alive()]
        ready = self.training()
        if len(ready) < self.size - 2:  # the last churns have not healed yet
            return None
        how = CHURN[self.turn % len(CHURN)]
        self.turn += 1
        ready[self.turn * 7 % len(ready)].leave(how)
        if how is not Leave.REJOIN:
            self.spawn()
        return how.value

    def settled(self, since: float) -> bool:
        """Every live worker trains and has pushed since ``since``; no one is leaving."""
        alive = [w for w in self.workers if w.is_alive()]
        return (len(alive) == self.size and len(self.training()) == self.size
                and all(w.last_ack > since for w in alive))

    def settle(self, timeout_s: float) -> float:
        """Wait until settled (then LINGER_S more); the seconds it took. RuntimeError if not."""
        began = time.monotonic()
        wait_until(lambda: self.settled(began) or self.tally.errors, timeout_s,
                   "the workers to settle")
        if self.tally.errors:
            raise RuntimeError(f"worker errors: {self.tally.errors[:3]}")
        time.sleep(LINGER_S)
        return time.monotonic() - began

    def close(self, grace_s: float = 5.0) -> int:
        """Once the hub has stopped: the workers it told have ended within ``grace_s``; the
        others (pairing, or waiting for a shard, when it stopped) are made to go. How many
        had not ended by themselves."""
        deadline = time.monotonic() + grace_s
        for w in self.workers:
            w.join(max(0.0, deadline - time.monotonic()))
        stuck = [w for w in self.workers if w.is_alive()]
        for w in stuck:
            w.leave(Leave.VANISH)
        for w in stuck:
            w.join(5.0)
        if not any(w.is_alive() for w in stuck):  # term() waits for every socket to close
            self.ctx.term()
        return len(stuck)


def wait_for_training(swarm: Swarm, timeout_s: float) -> None:
    wait_until(lambda: len(swarm.training()) == swarm.size or swarm.tally.errors, timeout_s,
               "every worker to train")
    if swarm.tally.errors:
        raise RuntimeError(f"worker errors: {swarm.tally.errors[:3]}")


def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.1)


# ----------------------------------------------------------------------------- the run
def soak(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Run the soak; the record of what it measured."""
    began = time.monotonic()
    hub = Hub(root, args.workers, args.codec, args.eval_every)
    swarm: Swarm | None = None
    try:
        at_start = measure(hub.pid)
        tally = Tally()
        swarm = Swarm(hub.port, args.workers, tally)
        wait_for_training(swarm, 180.0)
        record = observe(args, hub, swarm, tally)
        record["start"] = at_start
        record["startup_s"] = round(record.pop("t0") - began, 1)
    finally:
        hub_code = hub.stop()
        lingered = swarm.close() if swarm is not None else 0
    record.update(hub_exit=hub_code, lingered_workers=lingered, hub_log=hub.log_counts(),
                  metrics=hub.rounds(), counts=dict(tally.counts), errors=tally.errors[:20],
                  wall_s=round(time.monotonic() - began, 1))
    return record


def observe(args: argparse.Namespace, hub: Hub, swarm: Swarm, tally: Tally) -> dict[str, Any]:
    """Sample and churn for the run's duration; measure at warm-up's end and at the end."""
    t0 = time.monotonic()
    duration, samples = 60.0 * args.minutes, []
    churns: list[str] = []
    warm_at = t0 + args.warmup * duration
    marks: dict[str, Any] = {}
    next_sample = next_churn = t0
    while (now := time.monotonic()) < t0 + duration or (
            now < t0 + duration + args.settle_timeout and wanting(args, churns, marks, tally)):
        if tally.errors:
            raise RuntimeError(f"worker errors: {tally.errors[:3]}")
        if hub.proc.poll() is not None:
            raise RuntimeError(f"the hub exited ({hub.proc.returncode})")
        if now >= next_sample:
            samples.append({"t": round(now - t0, 1), "version": tally.version,
                            **{k: v for k, v in measure(hub.pid).items() if k != "fd_kinds"}})
            next_sample += args.sample_every
        if "warm" not in marks and now >= warm_at:
            marks["warm"] = quiet_point(swarm, hub, tally, t0, args.settle_timeout)
            next_churn = time.monotonic()
        elif now >= next_churn and args.churn_every > 0 and (
                now < t0 + duration or missing_churn(args, churns)):  # not for --min-rounds
            how = swarm.churn()
            if how:
                churns.append(how)
            next_churn = now + args.churn_every
        time.sleep(0.05)
    marks["end"] = quiet_point(swarm, hub, tally, t0, args.settle_timeout)
    return {"t0": t0, "samples": samples, "churn": {k: churns.count(k) for k in set(churns)},
            **marks}


def missing_churn(args: argparse.Namespace, churns: list[str]) -> bool:
    """--every-churn, and a way of leaving has not happened yet."""
    return args.every_churn and set(churns) < {h.value for h in CHURN}


def wanting(args: argparse.Namespace, churns: list[str], marks: dict[str, Any],
            tally: Tally) -> bool:
    """Whether the run goes on past --minutes: a way of leaving (--every-churn) or rounds
    after warm-up (--min-rounds) are still missing."""
    if missing_churn(args, churns):
        return True
    if args.min_rounds <= 0:
        return False
    return "warm" not in marks or tally.version - marks["warm"]["version"] < args.min_rounds


def quiet_point(swarm: Swarm, hub: Hub, tally: Tally, t0: float,
                timeout_s: float) -> dict[str, Any]:
    """Stop churning, wait until the swarm is whole and quiet, then measure the hub."""
    settle_s = swarm.settle(timeout_s)
    readings = []
    for _ in range(READINGS):
        readings.append(measure(hub.pid))
        time.sleep(0.2)
    # The hub opens files for a moment (a metrics line each round, a checkpoint every 50):
    # the least of a few readings is its resting count, which a leak would still raise.
    rest = min(readings, key=lambda r: r["fds"])
    return {"t": round(time.monotonic() - t0, 1), "settle_s": round(settle_s, 1),
            "version": tally.version, "workers_started": swarm.started,
            **rest, "rss_kb": statistics.median_low(r["rss_kb"] for r in readings),
            "anon_kb": statistics.median_low(r["anon_kb"] for r in readings),
            "fd_readings": [r["fds"] for r in readings]}


def judge(record: dict[str, Any], args: argparse.Namespace) -> dict[str, bool]:
    """The checks a run must pass."""
    warm, end = record["warm"], record["end"]
    record["rss_growth_pct"] = round(100 * (end["rss_kb"] - warm["rss_kb"]) / warm["rss_kb"], 2)
    record["fd_growth"] = end["fds"] - warm["fds"]
    after = [s for s in record["samples"] if s["t"] >= warm["t"]]
    record["rss_slope_kb_per_min"] = round(slope(after), 1) if len(after) > 2 else None
    late = after[len(after) // 2:]
    record["rss_slope_late_kb_per_min"] = round(slope(late), 1) if len(late) > 2 else None
    record["rss_max_kb"] = max(s["rss_kb"] for s in record["samples"] + [warm, end])
    record["anon_max_kb"] = max(s["anon_kb"] for s in record["samples"] + [warm, end])
    record["fd_max"] = max(s["fds"] for s in record["samples"] + [warm, end])
    span = max(1e-9, end["t"] - warm["t"])
    record["rounds_per_s"] = round((end["version"] - warm["version"]) / span, 1)
    counts = record["counts"]
    return {
        f"RSS growth < {args.max_growth}%": record["rss_growth_pct"] < args.max_growth,
        f"descriptors grew by <= {args.fd_slack}": record["fd_growth"] <= args.fd_slack,
        "no worker errors": not record["errors"],
        "rounds went on after warm-up": end["version"] > warm["version"],
        "every kind of churn happened": all(counts.get(f"leave_{h.value}", 0) > 0
                                            for h in set(CHURN)) or args.churn_every <= 0,
        "stalled workers were freed": counts.get("stall_freed", 0) == counts.get(
            "leave_stall", 0),
        "hub stopped cleanly (exit 130)": record["hub_exit"] == 130,
        "every worker left when the hub stopped": record["lingered_workers"] == 0,
    }


def slope(samples: list[dict[str, Any]]) -> float:
    """Least-squares RSS trend in kB per minute."""
    ts = [s["t"] / 60 for s in samples]
    ys = [s["rss_kb"] for s in samples]
    mt, my = statistics.fmean(ts), statistics.fmean(ys)
    var = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (y - my) for t, y in zip(ts, ys, strict=True)) / var if var else 0.0


# ----------------------------------------------------------------------------- main
def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--minutes", type=float, default=10.0, help="run length after every worker "
                   "trains (default %(default)s)")
    p.add_argument("--workers", type=int, default=32, help="simulated workers (default 32)")
    p.add_argument("--warmup", type=float, default=0.2, help="fraction of the run that is warm-up")
    p.add_argument("--churn-every", type=float, default=5.0, help="seconds between churns "
                   "(0: none)")
    p.add_argument("--every-churn", action="store_true", help="run on past --minutes "
                   "(by --settle-timeout at most) until every way of leaving has happened")
    p.add_argument("--min-rounds", type=int, default=0, help="... and until this many "
                   "rounds were made after warm-up (a loaded machine makes fewer), without "
                   "churn once --minutes are over")
    p.add_argument("--sample-every", type=float, default=2.0, help="seconds between samples")
    p.add_argument("--codec", default="zstd", help="how pushes travel (default %(default)s)")
    p.add_argument("--eval-every", type=int, default=0, help="rounds between the hub's test "
                   "evaluations (default 0: none; see soak_report.EVAL_NOTE)")
    p.add_argument("--max-growth", type=float, default=SOAK.rss_growth_pct,
                   help="RSS growth limit in %% (default %(default)s: benchmarks/targets.py)")
    p.add_argument("--fd-slack", type=int, default=SOAK.fd_growth,
                   help="descriptors the hub may gain (default %(default)s)")
    p.add_argument("--settle-timeout", type=float, default=120.0, help="seconds to wait for "
                   "the workers to settle before a measurement")
    p.add_argument("--results", type=Path, default=REPO / "benchmarks/results/soak.jsonl")
    p.add_argument("--report", default=None, help="write the markdown here ('-': print it)")
    p.add_argument("--label", default="soak", help="name of the run in the results")
    p.add_argument("--keep", action="store_true", help="keep the hub's folder and logs")
    p.add_argument("--report-only", action="store_true", help="run nothing: write --report "
                   "for the latest recorded run named --label (its table lists every run)")
    return p.parse_args(argv)


def report_only(args: argparse.Namespace) -> int:
    """Re-render the report of the latest recorded run labelled ``args.label``."""
    record = latest(args.results, args.label)
    if record is None:
        print(f"no run labelled {args.label!r} in {args.results}", file=sys.stderr)
        return 2
    write_text(report(record), args.report or "-")
    return 0


def report(record: dict[str, Any]) -> str:
    """The markdown of one recorded run."""
    return render(record, defaults=vars(parse([])), linger_s=LINGER_S, readings=READINGS)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.report_only:
        return report_only(args)
    signal.signal(signal.SIGTERM, exit_on_signal)  # the finally blocks stop the hub
    root = Path(tempfile.mkdtemp(prefix="computeshare-soak-"))
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        record = soak(args, root)
    except BaseException:
        print(f"soak failed; the hub's folder and logs are in {root}", file=sys.stderr)
        raise
    record = {"date": date, "label": args.label, "args": {
        k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "machine": machine(), **record}
    record["checks"] = judge(record, args)
    record["passed"] = all(record["checks"].values())
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with open(args.results, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    write_text(report(record), args.report)
    for name, ok in record["checks"].items():
        print(f"{'PASS' if ok else 'FAIL'}: {name}")
    print(f"RSS {mb(record['warm']['rss_kb'])} after warm-up -> {mb(record['end']['rss_kb'])} "
          f"at the end ({record['rss_growth_pct']:+.2f}%); descriptors {record['warm']['fds']} "
          f"-> {record['end']['fds']}; {record['metrics']['rounds']} rounds")
    if record["passed"] and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"the hub's folder and logs: {root}")
    return 0 if record["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
