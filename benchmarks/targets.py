"""Acceptance targets: every bound a benchmark report judges PASS/FAIL (or MISS) against.

One table, read by the reports; no bound is written in a code path. A report names the bound
in its own words ("≤ 10 ms median") from the value here, so changing a number here changes
both the verdict and what the report says about it. Changing one is a decision about the
product: say why in the commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Core:
    """``benchmarks.bench_core`` (docs/BENCHMARKS.md, section 7): loopback, 2 workers."""

    overhead_s: float = 0.010  # at most: median round time outside the slowest worker's compute
    round_kb: float = 360  # at most: kB (1,000 B) on the wire per round, each lossless codec
    push_ratio: float = 1.05  # at most: bytes of one PUSH over the raw float32 gradient's
    demo_s: float = 60.0  # at most: `computeshare demo` launch to an eval >= demo_accuracy
    demo_accuracy: float = 0.95  # the test accuracy that demo_s times


@dataclass(frozen=True)
class Lan:
    """``benchmarks.bench_lan`` (docs/BENCHMARKS-LAN.md, "Targets"): the shaped LAN."""

    # the test accuracy each model's "time to" and "steps to" columns are measured at
    accuracy: dict[str, float] = field(default_factory=lambda: {
        "simplenet": 0.95, "resnet18": 0.85})  # ResNet-18 is at 87% after 2 epochs
    ddp_speedup: float = 3.0  # at least: ResNet-18 at 100 Mbit/s, samples/s over DDP gloo's
    compute_share: float = 0.80  # at least: ResNet-18 at 100 Mbit/s, compute / round time
    resnet_accuracy_drop: float = 0.01  # at most: below lossless sync after 2 epochs
    time_over_ddp: float = 1.0  # at most: simplenet at 100 Mbit/s, time to 95% over DDP's
    # at most: simplenet, 2 workers, unshaped: application bytes per round, by mode
    round_bytes: dict[str, float] = field(default_factory=lambda: {
        "int8": 100e3, "top-k 1%": 25e3})
    simplenet_accuracy_drop: float = 0.005  # at most: below lossless after 600 steps
    resent: int = 0  # at most: requests the workers sent again after a timeout
    app_over_payload: float = 1.02  # at most: bytes per round over one push + one model each
    big_round_bytes: float = 1_000_000  # ... judged on runs that move at least this a round


@dataclass(frozen=True)
class Soak:
    """``benchmarks.soak`` (docs/BENCHMARKS-SOAK.md): the defaults of --max-growth and
    --fd-slack."""

    rss_growth_pct: float = 5.0  # below: RSS growth from warm-up's end to the run's end
    fd_growth: int = 0  # at most: descriptors the hub gains over the same span


@dataclass(frozen=True)
class Async:
    """``benchmarks.bench_async`` (docs/BENCHMARKS-ASYNC.md) judges no PASS/FAIL: it times
    each mode to this test accuracy."""

    accuracy: float = 0.95


CORE, LAN, SOAK, ASYNC = Core(), Lan(), Soak(), Async()
