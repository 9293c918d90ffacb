"""Markdown tables from the shaped-LAN results: throughput beside DDP, accuracy, targets."""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
from typing import Any

import torch

from computeshare_desktop import __version__

from .evaluate import time_to
from .net import LINKS

TARGET = {"simplenet": 0.95, "resnet18": 0.95}
LINK_NAMES = {"unshaped": "unshaped", "1gbit": "1 Gbit/s", "100mbit": "100 Mbit/s",
              "20mbit": "20 Mbit/s"}


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{1000 * x:,.1f}" if x < 10 else f"{1000 * x:,.0f}"


def _kb(x: float | None) -> str:
    return "—" if x is None else f"{x / 1000:,.1f}"


def one_line(row: dict[str, Any]) -> str:
    s = row["summary"]
    if "error" in s:
        return f"ERROR {s['error']}"
    extra = ""
    if row.get("curve"):
        extra = f", final snapshot {100 * row['curve'][-1][2]:.1f}%"
    return (f"{s['samples_per_s']:.1f} samples/s, round {_ms(s['round_s'])} ms "
            f"(compute {_ms(s['compute_s'])}), {_kb(s['bytes_per_step'])} kB/step{extra}")


def _by(rows: list[dict[str, Any]], **match: Any) -> list[dict[str, Any]]:
    return [r for r in rows if all(r["spec"][k] == v for k, v in match.items())]


def _throughput_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if not r["spec"]["snapshot_every"] and "error" not in r["summary"]]


def throughput_table(rows: list[dict[str, Any]], model: str) -> str:
    runs = _throughput_rows(_by(rows, model=model))
    if not runs:
        return "(not run)\n"
    out = ["| link | workers | mode | samples/s | × DDP | round ms | compute ms | "
           "other ms | compute share | kB per step | wire / app bytes | rounds |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for link in LINKS:
        for workers in (1, 2, 4):
            group = _by(runs, link=link, workers=workers)
            ddp = next((r for r in group if r["spec"]["system"] == "ddp"), None)
            base = ddp["summary"]["samples_per_s"] if ddp else None
            for r in sorted(group, key=lambda r: (r["spec"]["system"] != "ddp",
                                                   r["spec"]["label"])):
                s = r["summary"]
                ratio = f"{s['samples_per_s'] / base:.2f}×" if base else "—"
                share = (f"{100 * s['compute_s'] / s['round_s']:.0f}%"
                         if s.get("compute_s") else "—")
                wire = f"{s['wire_over_app']:.3f}" if s.get("wire_over_app") else "—"
                label = r["spec"]["label"]
                if s.get("mode"):
                    m = s["mode"]
                    label += f" → {m['preset']} ({m['codec']}, H={m['local_steps']})"
                out.append(f"| {LINK_NAMES[link]} | {workers} | {label} | "
                           f"{s['samples_per_s']:,.1f} | {ratio} | {_ms(s['round_s'])} | "
                           f"{_ms(s['compute_s'])} | {_ms(s['comm_s'])} | {share} | "
                           f"{_kb(s['bytes_per_step'])} | {wire} | {s['rounds']} |")
    return "\n".join(out) + "\n"


def accuracy_table(rows: list[dict[str, Any]], model: str) -> str:
    runs = [r for r in _by(rows, model=model) if r["spec"]["snapshot_every"]]
    if not runs:
        return "(not run)\n"
    target = TARGET[model]
    out = [f"| mode | link | steps | samples | time to {100 * target:.0f}% s | steps to "
           f"{100 * target:.0f}% | accuracy at the end | samples/s | kB per step |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (r["spec"]["system"] != "ddp", r["spec"]["label"])):
        curve, s, spec = r["curve"], r["summary"], r["spec"]
        hit = time_to(curve, target)
        last = curve[-1] if curve else None
        samples = last[0] * spec["batch"] * spec["workers"] if last else 0
        out.append(f"| {spec['label']} | {LINK_NAMES[spec['link']]} | "
                   f"{last[0] if last else '—'} | {samples:,} | "
                   f"{f'{hit[1]:.1f}' if hit else 'never'} | {hit[0] if hit else '—'} | "
                   f"{f'{100 * last[2]:.2f}%' if last else '—'} | "
                   f"{s.get('samples_per_s', 0):,.1f} | {_kb(s.get('bytes_per_step'))} |")
    return "\n".join(out) + "\n"


def curves(rows: list[dict[str, Any]]) -> str:
    out = []
    for r in rows:
        if r.get("curve"):
            spec = r["spec"]
            points = ", ".join(f"{s}: {100 * a:.1f}% at {t:.1f} s" for s, t, a in r["curve"])
            out.append(f"- {spec['model']}, {spec['label']}, {LINK_NAMES[spec['link']]}: "
                       f"{points}")
    return "\n".join(out) + "\n"


SETUP = """\
Rerun as root from the repository root, with the project's virtual environment:

```
sudo .venv/bin/python benchmarks/bench_lan.py                  # every run (hours)
sudo .venv/bin/python benchmarks/bench_lan.py --plan targets   # the runs the targets need
sudo .venv/bin/python benchmarks/bench_lan.py --report-only    # rewrite this file
```

**Setup.** A virtual LAN of Linux network namespaces joined by a bridge (the test suite's
`tests/netlab.py`): one machine for the hub and one per worker. Every machine's link is
shaped in both directions with `htb` (this kernel has no `netem` or `tbf`, so links have
their rate but no added latency). ComputeShare runs as real `computeshare host` and
`computeshare join` processes, paired with the PIN and CURVE-encrypted as in real use; DDP
runs as real `torch.distributed` gloo ranks (`benchmarks/lan/ddp_worker.py`) on the worker
machines, with `GLOO_SOCKET_IFNAME` set. Both train the same model from the same seeded
weights on the same shards and samples (the shard streams of `sampling.py`), batch 32 per
worker, SGD with momentum 0.9 and lr 0.01 x workers; every process uses one torch thread,
and all of them share this machine's 2 cores (so 4 workers are also CPU-bound).

**Columns.** *samples/s*: training samples per second, all workers, over the steady rounds
(the first round, which downloads the whole model, and the rounds before `auto` switched
are not counted). *round*: the hub's round time (DDP: a step); *compute*: the slowest
worker's compute in it (DDP: a step under `no_sync()`, without the all-reduce); *other*:
the rest (the wire, the hub, the codecs, latency). *compute share*: compute / round.
*kB per step*: bytes of every message of a round, counted once at the hub, per global step
(DDP: bytes every machine sent, from the interfaces' counters). *wire / app bytes*: bytes
every machine sent on its link (IP headers, TCP acknowledgements, CURVE and all) over the
bytes of the messages the hub handled in the same rounds: a resent payload would show as
extra wire bytes. Accuracy: snapshots of the weights evaluated on the 1,000 test images
after the run, so evaluation never slows a timed run; times are from the start of round 1.
"""


def render(rows: list[dict[str, Any]]) -> str:
    rows = [r for r in rows if "summary" in r]
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "# ComputeShare desktop — shaped-LAN benchmark\n",
        f"Generated by `benchmarks/bench_lan.py` on {when} from {len(rows)} runs.\n",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"torch {torch.__version__}, computeshare-desktop {__version__}, "
        f"{os.cpu_count()} CPUs.\n",
        SETUP,
        "## Targets\n", targets(rows),
        "## Throughput: simplenet\n", throughput_table(rows, "simplenet"),
        "## Throughput: ResNet-18\n", throughput_table(rows, "resnet18"),
        "## Accuracy: simplenet\n", accuracy_table(rows, "simplenet"),
        "## Accuracy: ResNet-18\n", accuracy_table(rows, "resnet18"),
        "## Accuracy curves (snapshots evaluated after the runs)\n", curves(rows),
    ]
    return "\n".join(parts)


def _summary(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    found = [r for r in _throughput_rows(rows) if all(r["spec"][k] == v
                                                     for k, v in match.items())]
    return found[0]["summary"] if found else None


def targets(rows: list[dict[str, Any]]) -> str:
    """The issue's targets, each with the measured figure and its margin."""
    out = ["| target | measured | result |", "|---|---|---|"]

    def line(name: str, measured: str, ok: bool | None) -> None:
        out.append(f"| {name} | {measured} | "
                   f"{'—' if ok is None else '**PASS**' if ok else '**MISS**'} |")

    ddp = _summary(rows, system="ddp", model="resnet18", workers=2, link="100mbit")
    best = [(r["spec"]["label"], r["summary"]) for r in _throughput_rows(rows)
            if r["spec"]["system"] == "cs" and r["spec"]["model"] == "resnet18"
            and r["spec"]["workers"] == 2 and r["spec"]["link"] == "100mbit"]
    if ddp and best:
        label, s = max(best, key=lambda b: b[1]["samples_per_s"])
        ratio = s["samples_per_s"] / ddp["samples_per_s"]
        line("ResNet-18, 100 Mbit/s, 2 workers: samples/s ≥ 3× DDP",
             f"{label}: {s['samples_per_s']:.1f} vs DDP {ddp['samples_per_s']:.1f} = "
             f"{ratio:.2f}×", ratio >= 3)
        share = s["compute_s"] / s["round_s"]
        line("... worker compute ≥ 80% of wall time (best preset)",
             f"{label}: {100 * share:.0f}%", share >= 0.8)
    acc = {r["spec"]["label"]: r["curve"][-1] for r in rows
           if r["spec"]["model"] == "resnet18" and r.get("curve")}
    if LOSSLESS_LABEL in acc:
        ref = acc[LOSSLESS_LABEL][2]
        for label, (steps, _, a) in acc.items():
            if label not in (LOSSLESS_LABEL, "ddp"):
                line(f"ResNet-18 {label}: accuracy after {steps} steps within 1 point of "
                     f"lossless sync", f"{100 * a:.2f}% vs {100 * ref:.2f}%",
                     a >= ref - 0.01)
    sn = {r["spec"]["label"]: r for r in rows if r["spec"]["model"] == "simplenet"
          and r.get("curve")}
    if "ddp" in sn:
        ddp_t = time_to(sn["ddp"]["curve"], 0.95)
        for label, r in sn.items():
            if label == "ddp":
                continue
            t = time_to(r["curve"], 0.95)
            line(f"simplenet {label}, 100 Mbit/s: time to 95% ≤ DDP's",
                 f"{t[1] if t else float('nan'):.1f} s vs DDP "
                 f"{ddp_t[1] if ddp_t else float('nan'):.1f} s",
                 bool(t and ddp_t and t[1] <= ddp_t[1]))
    for label, limit in (("int8", 100e3), ("top-k 1%", 25e3)):
        s = _summary(rows, model="simplenet", label=label, workers=2, link="unshaped")
        if s:
            line(f"simplenet {label}: bytes per round ≤ {limit / 1000:.0f} kB",
                 f"{s['bytes_per_round'] / 1000:.1f} kB", s["bytes_per_round"] <= limit)
        if label in sn and LOSSLESS_LABEL in sn:
            a, ref = sn[label]["summary"]["final"], sn[LOSSLESS_LABEL]["summary"]["final"]
            if a and ref:
                line(f"simplenet {label}: final accuracy within 0.5 points of lossless",
                     f"{100 * a['accuracy']:.2f}% vs {100 * ref['accuracy']:.2f}%",
                     a["accuracy"] >= ref["accuracy"] - 0.005)
    ratios = [r["summary"]["wire_over_app"] for r in _throughput_rows(rows)
              if r["summary"].get("wire_over_app")]
    if ratios:
        line("no payload sent twice: bytes on the wire ≤ 1.02× the payloads",
             f"median {statistics.median(ratios):.3f}, max {max(ratios):.3f} over "
             f"{len(ratios)} runs", max(ratios) <= 1.02)
    return "\n".join(out) + "\n"


LOSSLESS_LABEL = "lossless sync"
