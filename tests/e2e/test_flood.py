"""An unpaired peer on the LAN hammering the hub does not keep workers from pairing, nor slow
down paired workers much."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.net import cli, free_ports, metrics
from helpers.portable import loopback_aliases_work

ATTACKER = "127.0.0.2"  # another machine on the LAN (the workers are on 127.0.0.1)
pytestmark = [pytest.mark.slow, pytest.mark.alone,  # it compares round times
              pytest.mark.skipif(not loopback_aliases_work(ATTACKER),
                                 reason=f"needs {ATTACKER} as a source address (macOS has "
                                        "only 127.0.0.1 on lo0 unless aliased)")]
PIN = "975310"
ROUNDS = 250  # three sessions; medians over 230 rounds each
ROOT = Path(__file__).resolve().parents[2]  # testbed.flooder runs from the root


def run_session(out: Path, flood_rate: float | None) -> tuple[float, dict | None, float]:
    """One session of two workers: the median round (s) after warm-up, the flooder's
    counts, and when training began (the first round's close, s after the hub started)."""
    port = free_ports()
    hub = cli("host", "--pin", PIN, "--bind", "127.0.0.1", "--port", str(port), "--out",
              str(out), "--quiet", "--workers", "2", "--rounds", str(ROUNDS), "--eval-every", "0")
    flooder = None
    if flood_rate:  # hammering before the workers even pair, until the session ends
        flooder = subprocess.Popen([sys.executable, "-m", "testbed.flooder", "127.0.0.1",
                                    str(port), "600", str(flood_rate), str(out) + ".flood.json",
                                    ATTACKER], cwd=ROOT)
    workers = [cli("join", f"127.0.0.1:{port}", "--pin", PIN, "--device", "cpu", "--quiet",
                   "--threads", "1", "--name", f"w{i}", "--wait", "60") for i in range(2)]
    try:
        out_text, err = hub.communicate(timeout=240)
        assert hub.returncode == 0, err
        for w in workers:
            w.communicate(timeout=60)
            assert w.returncode == 0
    finally:
        for proc in (hub, *workers):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        counts = None
        if flooder is not None:
            flooder.kill()
            flooder.communicate()
            counts = json.loads(Path(str(out) + ".flood.json").read_text(encoding="utf-8"))
    rounds = [r for r in metrics(out) if r["type"] == "round"]
    assert [r["round"] for r in rounds] == list(range(1, ROUNDS + 1))
    assert all(r["contributors"] == 2 for r in rounds[20:])
    return (statistics.median(r["seconds"] for r in rounds[20:]), counts,
            rounds[0]["elapsed_s"])


def test_flooded_hub_keeps_training_at_speed(tmp_path):
    quiet, _, quiet_start = run_session(tmp_path / "quiet", None)
    flooded, counts, flooded_start = run_session(tmp_path / "flooded", 300.0)
    assert counts is not None and counts["pair_start"] > 300 and counts["curve"] > 100
    assert counts["replies"] > 300  # the hub answered the flood (BUSY / MALFORMED) all along
    # the flood ran from before the workers paired until the end, and did not hold them up
    assert flooded_start <= quiet_start + 5.0, (
        f"training began {flooded_start:.1f} s after the hub under flood, "
        f"{quiet_start:.1f} s without")
    quiet_again, _, _ = run_session(tmp_path / "quiet2", None)
    baseline = max(quiet, quiet_again)
    assert flooded <= 1.5 * baseline, (
        f"median round {1000 * flooded:.1f} ms under flood vs {1000 * baseline:.1f} ms quiet")
