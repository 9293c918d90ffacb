"""Markdown tables from the shaped-LAN results: throughput beside DDP, accuracy, targets."""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable

from benchmarks._common import machine, median, table
from benchmarks.targets import LAN

from .evaluate import time_to
from .net import LINKS

LOSSLESS = "lossless sync"  # the mode every other one is held against
Line = Callable[[str, str, bool], None]  # a target's row: name, measured, met
MIN_WIRE_ROUNDS = 5  # rounds the wire/app ratio needs (its window's ends are a round wide)
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
    out = []
    for link in LINKS:
        for workers in (1, 2, 4):
            group = _by(runs, link=link, workers=workers)
            ddp = next((r for r in group if r["spec"]["system"] == "ddp"), None)
            base = ddp["summary"]["samples_per_s"] if ddp else None
            for r in sorted(group, key=lambda r: (r["spec"]["system"] != "ddp",
                                                   r["spec"]["label"])):
                out.append(_throughput_row(r, link, workers, base))
    return table(["link", "workers", "mode", "samples/s", "× DDP", "round ms", "compute ms",
                  "other ms", "compute share", "kB per step", "wire / app bytes", "rounds"],
                 out) + "\n"


def _throughput_row(r: dict[str, Any], link: str, workers: int,
                    base: float | None) -> list[Any]:
    s = r["summary"]
    ratio = f"{s['samples_per_s'] / base:.2f}×" if base else "—"
    # (DDP's compute is probed after its run, without the all-reduce: with one
    # worker it can exceed the step by noise, so shares are capped at 100%)
    share = (f"{min(100, 100 * s['compute_s'] / s['round_s']):.0f}%"
             if s.get("compute_s") else "—")
    wire = f"{s['wire_over_app']:.3f}" if s.get("wire_over_app") else "—"
    label = r["spec"]["label"]
    if s.get("mode"):
        m = s["mode"]
        label += f" → {m['preset']} ({m['codec']}, H={m['local_steps']})"
    return [LINK_NAMES[link], workers, label, f"{s['samples_per_s']:,.1f}", ratio,
            _ms(s["round_s"]), _ms(s["compute_s"]),
            _ms(None if s["comm_s"] is None else max(0.0, s["comm_s"])), share,
            _kb(s["bytes_per_step"]), wire, s["rounds"]]


def accuracy_table(rows: list[dict[str, Any]], model: str) -> str:
    runs = [r for r in _by(rows, model=model) if r["spec"]["snapshot_every"]]
    if not runs:
        return "(not run)\n"
    target = LAN.accuracy[model]
    pc = f"{100 * target:.0f}%"
    out = []
    for r in sorted(runs, key=lambda r: (r["spec"]["system"] != "ddp", r["spec"]["label"])):
        s, spec = r["summary"], r["spec"]
        hit = time_to(r["curve"], target)
        steps, final = end_accuracy(r)
        samples = steps * spec["batch"] * spec["workers"]
        out.append([spec["label"], LINK_NAMES[spec["link"]], steps, f"{samples:,}",
                    f"{hit[1]:.1f}" if hit else "never", hit[0] if hit else "—",
                    f"{100 * final:.2f}%" if final is not None else "—",
                    f"{s.get('samples_per_s', 0):,.1f}", _kb(s.get("bytes_per_step"))])
    return table(["mode", "link", "steps", "samples", f"time to {pc} s", f"steps to {pc}",
                  "accuracy at the end", "samples/s", "kB per step"], out) + "\n"


def projected(rows: list[dict[str, Any]], model: str, link: str) -> str:
    """Time to the target at ``link`` for the synchronous modes whose whole training ran on
    the unshaped link: the steps they needed there (the same computation on any link: same
    samples, same updates) times the step time measured at ``link``."""
    target = LAN.accuracy[model]
    pc = f"{100 * target:.0f}%"
    out = []
    for r in _by(rows, model=model, link="unshaped", workers=2):
        if not r["spec"]["snapshot_every"]:
            continue
        hit = time_to(r["curve"], target)
        speed = _summary(rows, model=model, label=r["spec"]["label"], workers=2, link=link)
        if hit and speed:
            per_step = speed["round_s"] / speed["steps_per_round"]
            out.append([r["spec"]["label"], hit[0], f"{per_step:.2f}",
                        f"{hit[0] * per_step:.0f}"])
    if not out:
        return "(not run)\n"
    return table(["mode", f"steps to {pc} (unshaped run)", f"s per step at {LINK_NAMES[link]}",
                  f"projected time to {pc} s"], out) + "\n"


def end_accuracy(r: dict[str, Any]) -> tuple[int, float | None]:
    """(steps, test accuracy) at the end of a run: the hub's final evaluation, or the last
    snapshot (DDP, or a run stopped early)."""
    final = r["summary"].get("final")
    if final:
        return final["version"], final["accuracy"]
    if r["curve"]:
        return r["curve"][-1][0], r["curve"][-1][2]
    return 0, None


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
sudo .venv/bin/python -m benchmarks.bench_lan                  # every run (hours)
sudo .venv/bin/python -m benchmarks.bench_lan --plan targets   # the runs the targets need
sudo .venv/bin/python -m benchmarks.bench_lan --report-only    # rewrite this file
```

**Setup.** A virtual LAN of Linux network namespaces joined by a bridge (`testbed/netlab.py`,
which the test suite uses too): one machine for the hub and one per worker. Every machine's link is
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

**Top-k warm-up.** Whole runs (the accuracy tables) train as users do: top-k starts at 25%
and falls to 1% over the first tenth of the session (one epoch at most). The throughput
runs see only a session's first rounds, so they measure top-k's steady state instead
(`--topk-warmup 0`). A row marked † was measured before that change, warm-up included
(up to 25% of the values a round: far more bytes than the steady state).
"""


def render(rows: list[dict[str, Any]]) -> str:
    rows = [r for r in rows if "summary" in r]
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "# ComputeShare desktop — shaped-LAN benchmark\n",
        f"Generated by `benchmarks/bench_lan.py` on {when} from {len(rows)} runs.\n",
        "Machine: {os}, Python {python}, torch {torch}, computeshare-desktop "
        "{computeshare}, {cpus} CPUs.\n".format(**machine()),
        SETUP,
        "## Targets\n", targets(rows),
        "## Throughput: simplenet\n", throughput_table(rows, "simplenet"),
        "## Throughput: ResNet-18\n", throughput_table(rows, "resnet18"),
        "## Accuracy: simplenet\n", accuracy_table(rows, "simplenet"),
        "## Accuracy: ResNet-18\n", accuracy_table(rows, "resnet18"),
        "The synchronous modes train the same way on any link, so their whole ResNet-18 runs "
        "were made on the unshaped link; at 100 Mbit/s their time to the target is "
        "projected from those runs and the step time measured at 100 Mbit/s:\n",
        projected(rows, "resnet18", "100mbit"),
        "## Accuracy curves (snapshots evaluated after the runs)\n", curves(rows),
    ]
    return "\n".join(parts)


def _summary(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    found = [r for r in _throughput_rows(rows) if all(r["spec"][k] == v
                                                     for k, v in match.items())]
    return found[0]["summary"] if found else None


def targets(rows: list[dict[str, Any]]) -> str:
    """The issue's targets (``benchmarks.targets.LAN``), each with the measured figure."""
    out: list[list[str]] = []
    notes: list[str] = []

    def line(name: str, measured: str, ok: bool) -> None:
        out.append([name, measured, "**PASS**" if ok else "**MISS**"])

    _resnet_targets(rows, line)
    _simplenet_targets(rows, line)
    _payload_targets(rows, line, notes)
    return (table(["target", "measured", "result"], out) + "\n"
            + "".join(f"\n{n}\n" for n in notes))


def _points(share: float) -> str:
    """Accuracy points: 0.01 -> "1 point", 0.005 -> "0.5 points"."""
    return f"{100 * share:g} point" + ("" if round(100 * share, 9) == 1 else "s")


def _resnet_targets(rows: list[dict[str, Any]], line: Line) -> None:
    """Speed beside DDP, compute share and accuracy, ResNet-18."""
    ddp = _summary(rows, system="ddp", model="resnet18", workers=2, link="100mbit")
    ours = {r["spec"]["label"]: r["summary"] for r in _throughput_rows(rows)
            if r["spec"]["system"] == "cs" and r["spec"]["model"] == "resnet18"
            and r["spec"]["workers"] == 2 and r["spec"]["link"] == "100mbit"}
    if ddp and ours:
        label, s = max(ours.items(), key=lambda b: b[1]["samples_per_s"])
        ratio = s["samples_per_s"] / ddp["samples_per_s"]
        line(f"ResNet-18, 100 Mbit/s, 2 workers: samples/s ≥ {LAN.ddp_speedup:g}× DDP gloo's "
             "(best preset)",
             f"{label}: {s['samples_per_s']:.1f} vs DDP {ddp['samples_per_s']:.1f} = "
             f"{ratio:.2f}×", ratio >= LAN.ddp_speedup)
        share = s["compute_s"] / s["round_s"]
        line(f"ResNet-18, 100 Mbit/s: worker compute ≥ {100 * LAN.compute_share:.0f}% of wall "
             "time (best preset)", f"{label}: {100 * share:.1f}%", share >= LAN.compute_share)
    acc = {r["spec"]["label"]: end_accuracy(r) for r in rows
           if r["spec"]["model"] == "resnet18" and r["spec"]["snapshot_every"]}
    if acc.get(LOSSLESS, (0, None))[1] is not None:
        ref = acc[LOSSLESS][1]
        for label, (steps, a) in acc.items():
            if label not in (LOSSLESS, "ddp") and a is not None:
                line(f"ResNet-18 {label}: test accuracy after 2 epochs ({steps} steps) within "
                     f"{_points(LAN.resnet_accuracy_drop)} of lossless sync",
                     f"{100 * a:.2f}% vs {100 * ref:.2f}%", a >= ref - LAN.resnet_accuracy_drop)


def _simplenet_targets(rows: list[dict[str, Any]], line: Line) -> None:
    """Time to the target beside DDP, bytes per round and accuracy, simplenet."""
    level = LAN.accuracy["simplenet"]
    pc = f"{100 * level:.0f}%"
    than_ddp = "DDP gloo's" if LAN.time_over_ddp == 1 else f"{LAN.time_over_ddp:g}× DDP gloo's"
    sn = {r["spec"]["label"]: r for r in rows if r["spec"]["model"] == "simplenet"
          and r.get("curve")}
    ddp_hit = time_to(sn["ddp"]["curve"], level) if "ddp" in sn else None
    if ddp_hit:
        timed = {label: time_to(r["curve"], level) for label, r in sn.items() if label != "ddp"}
        reached = {label: t for label, t in timed.items() if t}
        best = min(reached.items(), key=lambda kv: kv[1][1]) if reached else None
        for name, pick in (("auto (the default)", ("auto", timed.get("auto"))),
                           ("best mode", best)):
            if pick and pick[1]:
                line(f"simplenet, 100 Mbit/s: time to {pc} ≤ {than_ddp}, {name}",
                     f"{pick[0]}: {pick[1][1]:.1f} s vs DDP {ddp_hit[1]:.1f} s",
                     pick[1][1] <= LAN.time_over_ddp * ddp_hit[1])
    for label, limit in LAN.round_bytes.items():
        s = _summary(rows, model="simplenet", label=label, workers=2, link="unshaped")
        if s:
            line(f"simplenet {label}: bytes per round ≤ {limit / 1000:.0f} kB (2 workers)",
                 f"{s['bytes_per_round'] / 1000:.1f} kB", s["bytes_per_round"] <= limit)
        if label in sn and LOSSLESS in sn:
            a, ref = end_accuracy(sn[label])[1], end_accuracy(sn[LOSSLESS])[1]
            if a is not None and ref is not None:
                line(f"simplenet {label}: final accuracy within "
                     f"{_points(LAN.simplenet_accuracy_drop)} of lossless "
                     "(600 steps, the default demo)", f"{100 * a:.2f}% vs {100 * ref:.2f}%",
                     a >= ref - LAN.simplenet_accuracy_drop)


def _payload_targets(rows: list[dict[str, Any]], line: Line, notes: list[str]) -> None:
    """No payload sent twice (two ways), and a note on the wire's own overhead."""
    runs = _throughput_rows(rows)
    big_mb = f"{LAN.big_round_bytes / 1e6:g} MB"
    counted = [r for r in runs if r["summary"].get("resent") is not None]
    if counted:
        resent = sum(r["summary"]["resent"] for r in counted)
        line("no payload sent twice: requests sent again after a timeout (the workers' logs)",
             f"{resent} in {len(counted)} runs", resent <= LAN.resent)
    paid = [(r["spec"], r["summary"]["app_over_payload"]) for r in runs
            if r["summary"].get("app_over_payload")
            and r["summary"].get("app_bytes_per_round", 0) >= LAN.big_round_bytes]
    if paid:
        worst = max(paid, key=lambda b: b[1])
        line(f"no payload sent twice: bytes per round ≤ {LAN.app_over_payload:g}× the sum of "
             f"the payloads (one push and one model per worker), every run moving ≥ {big_mb} "
             "a round",
             f"{len(paid)} runs, median {median(b[1] for b in paid):.4f}, worst "
             f"{worst[1]:.4f} ({_where(worst[0])})", worst[1] <= LAN.app_over_payload)
    big = [(r["spec"], r["summary"]["wire_over_app"]) for r in runs
           if r["summary"].get("wire_over_app")
           and r["summary"].get("app_bytes_per_round", 0) >= LAN.big_round_bytes
           and r["summary"].get("rounds", 0) >= MIN_WIRE_ROUNDS]
    if big:  # not a target: what the transport adds to the messages (and window edges)
        worst = max(big, key=lambda b: b[1])
        notes.append(
            f"Bytes on the links over the bytes of the messages (the *wire / app* column: "
            f"TCP/IP and CURVE framing, heartbeats, and a window that can start or end a "
            f"transfer early; runs moving ≥ {big_mb} a round over ≥ {MIN_WIRE_ROUNDS} rounds): "
            f"median {median(b[1] for b in big):.3f}, worst {worst[1]:.3f} "
            f"({_where(worst[0])}). A request sent twice would not show here (the "
            "hub counts a duplicate's bytes as messages too): the payload check above does.")


def _where(spec: dict[str, Any]) -> str:
    return (f"{spec['model']} {spec['label']}, {LINK_NAMES[spec['link']]}, "
            f"{spec['workers']} workers")
