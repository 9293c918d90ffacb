"""Presets: names to modes, explicit settings over presets, and "auto" choosing from the link."""

from __future__ import annotations

import pytest
from helpers.hub import T0, grads, make_hub, start_training

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.events import ModeChanged
from computeshare_desktop.hub.presets import (PRESETS, PROBE_ROUNDS, SLOW_STEPS, Mode, choose,
                                              resolve)
from computeshare_desktop.protocol.messages import Model

def test_presets_map_to_codec_and_local_steps() -> None:
    assert resolve("lan") == ("lan", Mode("zstd", 0.01, 0))
    assert resolve("wifi") == ("wifi", Mode("int8", 0.01, 0))
    assert resolve("slow") == ("slow", Mode("topk", 0.01, SLOW_STEPS))
    assert resolve(None) == ("auto", Mode("zstd", 0.01, 0))  # measures, then decides


def test_explicit_settings_override_the_preset() -> None:
    assert resolve("slow", local_steps=4) == ("slow", Mode("topk", 0.01, 4))
    assert resolve("wifi", codec="fp16") == ("wifi", Mode("fp16", 0.01, 0))
    assert resolve(None, codec="topk", topk=0.05) == ("custom", Mode("topk", 0.05, 0))
    assert resolve("auto", local_steps=2) == ("custom", Mode("zstd", 0.01, 2))
    with pytest.raises(ConfigError):
        resolve("dialup")


@pytest.mark.parametrize("compute,other,expected", [
    (0.006, 0.005, "lan"),  # simplenet on loopback: Python and latency, not bytes
    (0.7, 0.4, "lan"),  # ResNet-18 on a fast link
    (0.7, 1.5, "wifi"),  # ... at 1 Gbit/s: int8 makes the wire 0.45 s
    (0.7, 13.0, "slow"),  # ... at 100 Mbit/s (measured: 13.8 s rounds)
    (0.0044, 0.05, "slow"),  # simplenet on a slow link: rounds are latency
])
def test_choose_keeps_compute_the_larger_part_of_a_round(compute: float, other: float,
                                                        expected: str) -> None:
    preset = choose(compute_s=compute, other_s=other)
    assert preset.name == expected
    if expected == "slow":
        assert preset.mode.codec == "topk" and preset.mode.local_steps >= SLOW_STEPS


def test_very_slow_links_take_more_local_steps() -> None:
    preset = choose(compute_s=0.7, other_s=400.0)  # ResNet-18 at 2 Mbit/s
    assert SLOW_STEPS < preset.mode.local_steps <= 32


def run_rounds(hub, workers, rounds: int, *, round_s: float, compute_ms: float) -> list:
    """Rounds of ``round_s`` seconds of which ``compute_ms`` are compute; the MODELs sent."""
    models, now = [], T0
    for r in range(rounds):
        after = hub.server.version - 1
        for w in workers:
            outs = w.pull(hub, now, after=after)
            models += [o.msg for o in outs if isinstance(o.msg, Model)]
        now += round_s
        for w, g in zip(workers, grads(hub, len(workers), seed=r), strict=True):
            m = models[-1]
            w.push(hub, now, g, samples=m.batch * max(1, m.steps), steps=m.steps,
                   codec=m.push_codec, compute_ms=compute_ms, bandwidth=1e6)
    return models


def test_auto_switches_to_the_slow_preset_on_a_slow_link() -> None:
    hub = make_hub(preset="auto", rounds=50, batch_size=8)
    workers = start_training(hub)
    models = run_rounds(hub, workers, PROBE_ROUNDS + 2, round_s=0.2, compute_ms=5.0)
    assert (models[0].push_codec, models[0].steps) == ("zstd", 0)  # probing, lossless
    expected = choose(compute_s=0.005, other_s=0.195).mode
    assert expected == Mode("topk", 0.01, SLOW_STEPS)
    last = models[-1]
    assert (last.push_codec, last.steps) == ("topk", expected.local_steps)
    (mode,) = [e for e in hub.drain_events() if isinstance(e, ModeChanged)]
    assert mode.preset == "slow" and mode.local_steps == expected.local_steps
    assert hub.checkpoint()["mode"] == expected.to_json()


def test_auto_stays_lossless_on_a_fast_link_and_custom_never_switches() -> None:
    for preset, round_s in (("auto", 0.008), ("custom", 0.2)):
        hub = make_hub(preset=preset, rounds=50)
        workers = start_training(hub)
        models = run_rounds(hub, workers, PROBE_ROUNDS + 2, round_s=round_s, compute_ms=5.0)
        assert {(m.push_codec, m.steps) for m in models} == {("zstd", 0)}
        modes = [e for e in hub.drain_events() if isinstance(e, ModeChanged)]
        assert [m.preset for m in modes] == (["lan"] if preset == "auto" else [])


def test_a_bad_preset_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        make_hub(preset="dialup")
    assert [p.label for p in PRESETS.values()] == ["Fast LAN", "Wi-Fi", "Slow link"]


def test_top_k_density_warms_up_from_a_quarter_to_its_fraction() -> None:
    from computeshare_desktop.hub.presets import WARMUP_DENSITY, topk_density

    densities = [topk_density(0.01, v, 60) for v in range(0, 80, 10)]
    assert densities[0] == WARMUP_DENSITY
    assert all(a > b for a, b in zip(densities, densities[1:6], strict=False))
    assert densities[6:] == [0.01, 0.01]
    assert topk_density(0.01, 5, 0) == 0.01  # no warm-up
    assert topk_density(0.5, 0, 60) == 0.5  # already denser than the warm-up


def test_a_top_k_session_warms_up_then_sends_its_fraction() -> None:
    """mnist-sample: 4,000 images / (2 x 8) = 250 steps an epoch; a tenth of 100 rounds."""
    hub = make_hub(codec="topk", topk=0.01, rounds=100, batch_size=8)
    workers = start_training(hub)
    models = run_rounds(hub, workers, 14, round_s=0.01, compute_ms=5.0)
    fractions = [m.topk for m in models[::2]]
    assert fractions[0] == 0.25 and fractions[-1] == 0.01
    assert all(a >= b for a, b in zip(fractions, fractions[1:], strict=False))
    assert hub.server.published.codec.fraction == 0.02  # 2 workers' worth of 1%
