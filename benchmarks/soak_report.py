"""The soak's report: the markdown of one run, with every recorded run in a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks._common import table

REPO = Path(__file__).resolve().parents[1]
# Why the soak does not evaluate by default (--eval-every turns it on).
EVAL_NOTE = ("each evaluation's 500-image batches make glibc keep or give back tens of MB, "
             "so the hub's RSS jumps by up to ±5% for seconds at a time, which would drown "
             "a leak; runs with evaluations are in the table below")


def latest(results: Path, label: str) -> dict[str, Any] | None:
    """The last run in ``results`` named ``label``."""
    runs = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()
            if line.strip()] if results.exists() else []
    return next((r for r in reversed(runs) if r["label"] == label), None)


def mb(kb: float) -> str:
    return f"{kb / 1024:.1f} MB"


def render(record: dict[str, Any], *, defaults: dict[str, Any], linger_s: float,
           readings: int) -> str:
    """The markdown report of one run; ``defaults``: the soak's option defaults (for the
    command line), ``linger_s`` and ``readings``: how its quiet points were measured."""
    end = record["end"]
    checks = "\n".join(f"- {'PASS' if ok else 'FAIL'}: {name}"
                       for name, ok in record["checks"].items())
    timeline = " · ".join(f"{s['t'] / 60:.0f} min {mb(s['rss_kb'])}"
                          for s in every_minute(record["samples"]))
    c, log, m = record["counts"], record["hub_log"], record["metrics"]
    a = record["args"]
    return f"""# ComputeShare desktop — soak

Run on {record['date']} ({record['label']}): {a['minutes']:g} min, {a['workers']} simulated
workers, churn every {a['churn_every']:g} s, whole run {record['wall_s']:.0f} s.
Machine: {record['machine']['cpus']} CPUs ({record['machine']['cpu']}), Python
{record['machine']['python']}, pyzmq {record['machine']['pyzmq']} (libzmq
{record['machine']['libzmq']}). Rerun (repository root):

```
{rerun(a, defaults)}
```

Setup: a real `computeshare host` process on 127.0.0.1 (simplenet, mnist-sample,
{a['codec']}, {a['workers']} shards, endless rounds, {evaluations(a['eval_every'])}, a
checkpoint every 50 rounds, `-v` log to a file) and {a['workers']} simulated workers,
threads of the benchmark process (`benchmarks/soak_worker.py`) that run the real worker
driver (`worker/driver.py`: its retries, heartbeat and give-up rule). Each comes from its own
loopback address (127.1.x.y, as machines on a LAN), pairs with the PIN (SPAKE2), joins over
CURVE, downloads its shard, heart-beats every second on its own socket, long-polls for each
version and pushes a fixed random N(0, 1e-3) gradient of the model's size (its sign
alternating with the version, so the weights stay bounded), with the hub decoding,
averaging and stepping for real. Churn, in turn: goodbye (a new key pairs in its place),
goodbye and rejoin with the same key, vanish without a word (reaped after 6 s of silence),
stall (heart-beats but never pulls: the watchdog frees its shard after 3 missed deadlines).
The hub is measured from /proc every {a['sample_every']:g} s. At the end of warm-up (the
first {100 * a['warmup']:.0f}% after every worker trains) and at the end, churn pauses
until all {a['workers']} workers train again, plus {linger_s:g} s, so both points see the
same connections; there RSS is the median of {readings} readings 0.2 s apart and the
descriptors their least (the hub holds a file open for a moment each round and for each
checkpoint).

{points_table(record)}

RSS growth after warm-up: **{record['rss_growth_pct']:+.2f}%** (least-squares trend
{record['rss_slope_kb_per_min']} kB/min after warm-up, {record['rss_slope_late_kb_per_min']}
kB/min over its second half); descriptors: **{record['fd_growth']:+d}**
({', '.join(f'{k} {v}' for k, v in sorted(end['fd_kinds'].items()))} at the end).
RSS over time: {timeline}.

What ran: {m['rounds']} rounds ({record['rounds_per_s']} rounds/s after warm-up, median
round {m['median_round_ms']} ms, {m['partial']} with fewer than {a['workers']} contributors:
a worker was leaving, joining or gone); {end['workers_started']} workers started;
{c.get('paired', 0)} pairings, {c.get('joined', 0)} joins; churn: {c.get('leave_bye', 0)} goodbyes,
{c.get('leave_rejoin', 0)} rejoins, {c.get('leave_vanish', 0)} vanished,
{c.get('leave_stall', 0)} stalled ({c.get('stall_freed', 0)} freed by the watchdog);
{c.get('pushed', 0)} pushes accepted, {c.get('pongs', 0)} heartbeats answered, refusals
seen by workers: {refusals(c)}; {c.get('timeouts', 0)} requests timed out. The hub's log:
{log['paired']} paired, {log['joined']} joined, {log['left_goodbye']} left with goodbye,
{log['left_silent']} reaped as silent, {log['left_stuck']} freed by the watchdog,
{log['deadline_closes']} rounds closed at their deadline, {log['errors']} errors.

{checks}

{history(record)}
"""


def rerun(a: dict[str, Any], defaults: dict[str, Any]) -> str:
    """The command line of this run (the options that differ from the defaults)."""
    keep = ("minutes", "workers", "warmup", "churn_every", "sample_every", "codec",
            "eval_every", "label")
    extra = " ".join(f"--{k.replace('_', '-')} {a[k]!r}" if isinstance(a[k], str) else
                     f"--{k.replace('_', '-')} {a[k]:g}" for k in keep if a[k] != defaults[k])
    return f".venv/bin/python -m benchmarks.soak {extra} --report docs/BENCHMARKS-SOAK.md" \
        .replace("  ", " ")


def evaluations(every: int) -> str:
    return f"a test evaluation every {every} rounds" if every else f"no evaluation ({EVAL_NOTE})"


def points_table(record: dict[str, Any]) -> str:
    """The hub at its start, at the end of warm-up and at the end (quiet points), and max."""
    points = [record["start"], record["warm"], record["end"]]
    rows = [["time since training began", "—", *(f"{p['t']:.0f} s" for p in points[1:]), ""],
            ["model version", "—", *(str(p["version"]) for p in points[1:]), ""],
            ["VmRSS", *(mb(p["rss_kb"]) for p in points), mb(record["rss_max_kb"])],
            ["RssAnon (heap)", *(mb(p["anon_kb"]) for p in points), mb(record["anon_max_kb"])],
            ["open descriptors", *(str(p["fds"]) for p in points), str(record["fd_max"])],
            ["threads", *(str(p["threads"]) for p in points), ""]]
    return table(["", "hub start", "end of warm-up", "end", "max"], rows)


def history(record: dict[str, Any]) -> str:
    """Every run in the results file, this one included."""
    path = Path(record["args"]["results"])
    runs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()] if path.exists() else []
    rows = [[r["date"], r["label"], f"{r['args']['minutes']:g}", r["args"]["workers"],
             f"{r['args']['churn_every']:g}", r["metrics"]["rounds"],
             f"{mb(r['warm']['rss_kb'])} → {mb(r['end']['rss_kb'])}",
             f"{r['rss_growth_pct']:+.2f}%", f"{r['warm']['fds']} → {r['end']['fds']}",
             "PASS" if r["passed"] else "FAIL"] for r in runs]
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    failed = any(not r["passed"] for r in runs)
    note = " Runs that failed are kept: each is a finding, which its label names." if failed \
        else ""
    return (f"Every run recorded in `{shown}`.{note}\n\n"
            + table(["date", "label", "minutes", "workers", "churn every s", "rounds",
                     "RSS warm-up → end", "growth", "descriptors", "result"], rows))


def refusals(counts: dict[str, int]) -> str:
    found = {k[len("reject_"):]: v for k, v in counts.items() if k.startswith("reject_")}
    return ", ".join(f"{k} {v}" for k, v in sorted(found.items())) or "none"


def every_minute(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    picked, last = [], -1
    for s in samples:
        if int(s["t"] // 60) > last:
            picked.append(s)
            last = int(s["t"] // 60)
    return picked + samples[-1:]
