"""Presets: a plain choice of link that maps to a codec and local steps. Pure.

* ``lan`` (Fast LAN): lossless zstd gradients every round, exactly synchronous SGD.
* ``wifi`` (Wi-Fi): int8 gradients with error feedback, about a quarter of the bytes.
* ``slow`` (Slow link): local steps, then the top 1% of the weight change with error
  feedback and an outer Nesterov step (DiLoCo): about 1/50 of the bytes, H times rarer.
* ``auto`` (the default): starts as ``lan``, measures compute time and the link during the
  first rounds, and switches to the lightest preset that keeps the wire under a quarter of
  the compute time (``choose``).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..codec import make_codec
from ..errors import ConfigError


@dataclass(frozen=True, slots=True)
class Mode:
    """How updates travel: the push codec, its top-k fraction, and the local steps."""

    codec: str
    topk: float
    local_steps: int

    def to_json(self) -> dict[str, object]:
        return {"codec": self.codec, "topk": self.topk, "local_steps": self.local_steps}


@dataclass(frozen=True, slots=True)
class Preset:
    """A named mode for people who know their network, not our codecs."""

    name: str
    label: str  # what the Host dialog shows
    mode: Mode
    summary: str  # one line for help texts and the dialog


SLOW_STEPS = 8
PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("lan", "Fast LAN", Mode("zstd", 0.01, 0),
           "wired, 1 Gbit/s or more: lossless gradients every round"),
    Preset("wifi", "Wi-Fi", Mode("int8", 0.01, 0),
           "Wi-Fi or 100 Mbit/s: int8 gradients with error feedback (1/4 of the bytes)"),
    Preset("slow", "Slow link", Mode("topk", 0.01, SLOW_STEPS),
           f"slow or shared links: {SLOW_STEPS} local steps, then the top 1% of the change"),
)}
PRESET_CHOICES = ("auto", *PRESETS)
AUTO = "auto"
AUTO_START = PRESETS["lan"].mode
PROBE_ROUNDS = 4  # rounds measured before ``auto`` decides (the first is not counted)
COMM_SHARE = 0.6  # the most of a round's time that may go to everything but compute
FIXED_OTHER_S = 0.005  # what a round costs outside compute however few bytes it moves


def resolve(preset: str | None, *, codec: str | None = None, topk: float | None = None,
            local_steps: int | None = None) -> tuple[str, Mode]:
    """The preset name a session records and its starting mode; explicit settings win.

    No preset and no explicit setting is ``auto``; explicit settings without a preset make
    a ``custom`` session that never switches.
    """
    if preset is not None and preset not in PRESET_CHOICES:
        raise ConfigError(f"unknown preset {preset!r}; choose one of {', '.join(PRESET_CHOICES)}")
    explicit = codec is not None or topk is not None or local_steps is not None
    name = preset or ("custom" if explicit else AUTO)
    base = AUTO_START if name in (AUTO, "custom") else PRESETS[name].mode
    mode = Mode(codec if codec is not None else base.codec,
                topk if topk is not None else base.topk,
                local_steps if local_steps is not None else base.local_steps)
    if name == AUTO and explicit:
        name = "custom"
    return name, mode


WARMUP_DENSITY = 0.25  # the top-k fraction a session starts with, decaying to its own


def topk_density(fraction: float, version: int, warmup: int) -> float:
    """The top-k fraction of the round at ``version``: Deep Gradient Compression's warm-up.

    The first ``warmup`` steps send more, from WARMUP_DENSITY down to ``fraction``
    geometrically, so the sparse updates of the first, fast-moving steps lose little;
    after that, ``fraction``.
    """
    if warmup <= 0 or version >= warmup or fraction >= WARMUP_DENSITY:
        return fraction
    return WARMUP_DENSITY * (fraction / WARMUP_DENSITY) ** (version / warmup)


def wire_fraction(mode: Mode) -> float:
    """Bytes on the wire per float32 byte of the model, for ``mode``'s codec (each codec
    knows its own: see ``Codec.wire_fraction``)."""
    return make_codec(mode.codec, topk=mode.topk).wire_fraction


def choose(*, compute_s: float, other_s: float) -> Preset:
    """The lightest preset that keeps a round within COMM_SHARE of non-compute time.

    ``compute_s`` and ``other_s`` are a step's compute time and the rest of a round (the
    wire, the hub, latency), measured in lossless rounds. The part of ``other_s`` that is
    bytes shrinks with the codec's wire fraction; FIXED_OTHER_S of it never does. Local
    steps then share what remains between H steps of compute.
    """
    lossless = wire_fraction(AUTO_START)

    def other_with(mode: Mode) -> float:
        return max(FIXED_OTHER_S, other_s * wire_fraction(mode) / lossless) \
            if mode != AUTO_START else other_s

    def fits(other: float, steps: int = 1) -> bool:
        return other <= COMM_SHARE * (other + steps * compute_s)

    for name in ("lan", "wifi"):
        if fits(other_with(PRESETS[name].mode)):
            return PRESETS[name]
    slow = PRESETS["slow"]
    other = other_with(slow.mode)
    steps = SLOW_STEPS
    while steps < 32 and not fits(other, steps):
        steps *= 2
    return Preset(slow.name, slow.label, Mode(slow.mode.codec, slow.mode.topk, steps),
                  slow.summary)


class AutoTuner:
    """Preset "auto": notes the first rounds' compute and the rest, then chooses once."""

    def __init__(self, active: bool) -> None:
        self.active = active
        self._probe: list[tuple[float, float]] = []
        self.compute_s = self.other_s = 0.0

    def observe(self, compute_s: float, other_s: float) -> Preset | None:
        """One round's split (the slowest worker's compute, the rest of the round); the
        preset to switch to once PROBE_ROUNDS were seen (the first, a warm-up, is not
        counted), else None."""
        if not self.active:
            return None
        self._probe.append((compute_s, other_s))
        if len(self._probe) < PROBE_ROUNDS:
            return None
        self.active = False
        self.compute_s = statistics.median(c for c, _ in self._probe[1:])
        self.other_s = statistics.median(o for _, o in self._probe[1:])
        return choose(compute_s=self.compute_s, other_s=self.other_s)
