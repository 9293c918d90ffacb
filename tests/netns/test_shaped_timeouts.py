"""Timeouts that follow the bytes, on a shaped link: a ResNet-18 push (44.7 MB of float32)
over 50 Mbit/s takes about 7 s, longer than the old fixed 5 s push timeout and 7 s pull
timeout. Each payload must cross the link once: the worker's bytes on the wire stay within a
few percent of the payloads the hub received, and the worker never gave up on a request.

The hub scores its final model on a --test folder of 10 digits, not mnist-sample's 1,000
test images: ResNet-18 at 28 px on one busy core took 15-20 s for those, a third of the test,
and nothing here is about accuracy. Workers train batches of 4 (the pushes are the same
size; a batch of 32 costs about 1 s of compute per round)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from computeshare_desktop.data import load_dataset
from testbed.netlab import VirtualLan, netns_available

pytestmark = pytest.mark.slow
CLI = [sys.executable, "-m", "computeshare_desktop.cli"]
PIN = "735194"
PORT = 47400
RATE, RATE_BPS = "50mbit", 50e6
OLD_PUSH_TIMEOUT_S = 5.0


def ten_digits(folder: Path) -> Path:
    """The first 10 test digits of mnist-sample as CLASS/N.png: a --test folder."""
    from PIL import Image

    test = load_dataset("mnist-sample", "test")
    for i in range(10):
        (folder / str(int(test.labels[i]))).mkdir(parents=True, exist_ok=True)
        Image.fromarray(test.images[i, 0].numpy()).save(folder / str(int(test.labels[i]))
                                                        / f"{i}.png")
    return folder


@pytest.mark.skipif(not netns_available(), reason="needs root for network namespaces")
def test_a_push_longer_than_the_old_timeout_is_sent_once(tmp_path: Path) -> None:
    out = tmp_path / "hub"
    digits = ten_digits(tmp_path / "digits")
    env = {**os.environ, "COMPUTESHARE_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1",
           "COMPUTESHARE_PIN": PIN}
    with VirtualLan(["hub", "w1"]) as lan:
        lan.shape(RATE)
        hub = lan.popen("hub", [*CLI, "host", "--pin", PIN, "--workers", "1", "--rounds", "2",
                                "--model", "resnet18", "--codec", "raw", "--eval-every", "0",
                                "--test", str(digits), "--batch-size", "4",
                                "--port", str(PORT), "--no-advertise", "--out", str(out),
                                "--quiet"], env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
        sent_before = lan.tx_bytes("w1")
        worker = lan.run("w1", [*CLI, "join", f"{lan.address('hub')}:{PORT}", "--device",
                                "cpu", "--threads", "1", "--quiet", "--name", "w1",
                                "--wait", "60"],
                         env=env, capture_output=True, text=True, timeout=300)
        sent = lan.tx_bytes("w1") - sent_before
        hub_out, hub_err = hub.communicate(timeout=120)
    assert worker.returncode == 0, worker.stdout + worker.stderr
    assert hub.returncode == 0, hub_out + hub_err
    assert "no answer from the hub" not in worker.stderr  # no request timed out
    lines = (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    rounds = [json.loads(line) for line in lines]
    rounds = [r for r in rounds if r["type"] == "round"]
    assert [(r["version"], r["contributors"], r["rejected"]) for r in rounds] == \
        [(1, 1, 0), (2, 1, 0)]
    pushed = sum(r["bytes_in"] for r in rounds)  # the two pushes (and their headers)
    assert pushed > 2 * 44_000_000
    assert pushed / (RATE_BPS / 8) / 2 > OLD_PUSH_TIMEOUT_S  # each push outlasts the old timeout
    # Everything the worker sent: the two pushes, plus its shard requests, pulls, heartbeats
    # and TCP's acknowledgements of the model downloads. A second copy of a push would add
    # 50%.
    assert pushed <= sent <= 1.05 * pushed, (sent, pushed)
