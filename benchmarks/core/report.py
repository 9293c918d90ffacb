"""The core report: sections 4 (demos), 5 (codecs), 6 (the original computeShare) and 7
(targets, from ``benchmarks.targets``) around sections 1-3, with the machine and the rerun
command."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from benchmarks._common import median, table
from benchmarks.targets import CORE

from .demos import DemoRun
from .plan import BATCH, CODECS, KB, NUMEL, ORIGINAL, WORKERS
from .replay import Replay
from .sections import (bytes_section, kb, machine_lines, ms, overhead_section,
                       round_section)
from .sessions import RoundStats


def demo_section(eval20: DemoRun, defaults: list[DemoRun], two: DemoRun | None) -> str:
    def row(d: DemoRun) -> list[str]:
        poll = f"{d.first_95_poll_s:.2f}" if d.first_95_poll_s is not None else "—"
        calc = (f"{d.startup_s + d.first_95_elapsed_s:.2f}"
                if d.startup_s is not None and d.first_95_elapsed_s is not None else "—")
        return [d.label, str(d.rounds), f"{d.wall_s:.1f}", f"{100 * d.final_acc:.2f}%",
                str(d.first_95_version or "never"), poll, calc,
                f"{d.startup_s:.2f}" if d.startup_s is not None else "—"]
    runs = [eval20, *defaults] + ([two] if two else [])
    pc, acc = f"{100 * CORE.demo_accuracy:.0f}%", f"{CORE.demo_accuracy:g}"
    curve = ", ".join(f"v{e['version']} {100 * e['accuracy']:.1f}%" for e in eval20.evals)
    later = [e for e in eval20.evals if e["version"] > (eval20.first_95_version or 10**9)]
    dips = [e for e in later if e["accuracy"] < CORE.demo_accuracy]
    dip_note = (f"After first reaching {pc}, {len(dips)} of {len(later)} later evals were below "
                f"{pc}" + (f" (lowest {100 * min(e['accuracy'] for e in dips):.1f}%)." if dips
                          else "."))
    finals = sorted({f"{100 * d.final_acc:.2f}%" for d in [eval20, *defaults]})
    med_wall = median([d.wall_s for d in defaults])
    med_acc = median([d.final_acc for d in defaults])
    return f"""## 4. `computeshare demo` (2 local workers, simplenet, mnist-sample, zstd)

Wall times are from launching the process; "{pc} seen" is when the first eval record with
accuracy ≥ {acc} appeared in metrics.jsonl (polled every 50 ms); "{pc} by elapsed_s" is the
start-up offset (launch to hub session start, from the first record's appearance) plus that
eval's `elapsed_s`. The demo evaluates on a background thread, so the record appears shortly
after the model version is reached.

{table(["run", "rounds", "wall s", "final accuracy", f"first version ≥ {pc}", f"{pc} seen s",
        f"{pc} by elapsed_s s", "start-up s"], [row(d) for d in runs])}

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
    """Section 7: each bound of ``benchmarks.targets.CORE`` against what was measured."""
    rows, verdicts = [], []
    raw_grad = NUMEL * 4
    t = CORE

    def add(name: str, target: str, value: str, ok: bool, margin: str) -> None:
        rows.append([name, target, value, "**PASS**" if ok else "**FAIL**", margin])
        verdicts.append(f"{'PASS' if ok else 'FAIL'}: {name} = {value} (target {target}; {margin})")

    for c in CODECS:
        other = median(stats[c].other_s)
        per_session = sorted(o for _, _, _, o, _ in stats[c].per_rep)
        add(f"overhead outside compute, {c}", f"≤ {1000 * t.overhead_s:g} ms median",
            f"{ms(other)} ms (sessions {ms(per_session[0])}-{ms(per_session[-1])})",
            other <= t.overhead_s, f"{ms(other - t.overhead_s)} ms vs target")
    for c in CODECS:
        wire = derived[c]["wire"]
        add(f"bytes per round, {c} (lossless)", f"≤ {t.round_kb:g} kB", f"{kb(wire)} kB",
            wire <= t.round_kb * KB, f"{kb(wire - t.round_kb * KB)} kB vs target")
    for c in CODECS:
        ratio = derived[c]["push"] / raw_grad
        add(f"bytes per push, {c}",
            f"≤ {t.push_ratio:.2f}× raw ({raw_grad * t.push_ratio:,.0f} B)",
            f"{derived[c]['push']:,.0f} B = {ratio:.3f}×", ratio <= t.push_ratio,
            f"{ratio - t.push_ratio:+.3f}× vs target")
    s, pc = eval20.first_95_poll_s, f"{100 * t.demo_accuracy:.0f}%"
    add(f"demo to {pc} test accuracy", f"≤ {t.demo_s:.0f} s",
        f"{s:.1f} s" if s is not None else "never", s is not None and s <= t.demo_s,
        f"{s - t.demo_s:+.1f} s vs target" if s is not None else f"did not reach {pc}")
    return ("## 7. Targets\n\n" + table(["target", "limit", "measured", "result", "margin"], rows)
            + "\n"), verdicts


def render(args: argparse.Namespace, started: dt.datetime, stats: dict[str, RoundStats],
           rep: Replay, codec_table: list[list[str]], big_note: str, eval20: DemoRun,
           defaults: list[DemoRun], two: DemoRun | None) -> str:
    versions = range(args.warmup, args.rounds)
    bytes_text, derived = bytes_section(stats, rep, versions)
    targets_text, verdicts = targets_section(stats, derived, eval20)
    arg_defaults = {"rounds": 300, "reps": 4, "warmup": 20, "demos": 2, "codec_calls": 200,
                    "out": None}
    cmd = "python -m benchmarks.bench_core" + "".join(
        f" --{k.replace('_', '-')} {getattr(args, k)}" for k, v in arg_defaults.items()
        if getattr(args, k) != v)
    codec_md = table(["tensor", "values", "codec", "bytes", "ratio vs float32", "encode median ms",
                      "encode p90 ms", "decode median ms", "decode p90 ms", "calls"], codec_table)
    return f"""# ComputeShare desktop — core benchmarks

Generated by `benchmarks/bench_core.py` on {started:%Y-%m-%d %H:%M} UTC (whole run @@TOTAL@@ s).

## Machine

{chr(10).join(machine_lines())}

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

