"""A user's own model, as real processes: a model class no one on the project wrote
(residual blocks, BatchNorm, GELU, Dropout), in a file on the hub, trains across two
``computeshare join`` workers, and its ``trained_model.pt2`` scores within 1 point of the
hub's reported test accuracy in a Python that never imported this package."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from computeshare_desktop.data import load_dataset
from helpers.net import cli, free_ports, metrics, reap

pytestmark = pytest.mark.slow
PIN = "864213"
# AdamW learns this net in few rounds: ~94% of mnist-sample's 1,000 test digits after 100
# (chance: 10%; earlier, while BatchNorm's statistics settle, it swings from run to run).
# The test takes ~25 s of CPU time, most of it four Pythons importing torch.
ROUNDS = 100

# Written for this test only: pre-activation residual blocks with strided 1x1 projections,
# BatchNorm, GELU and Dropout; nothing in the package or the other tests defines it.
STRANGERS_NET = '''
import torch
from torch import nn
import torch.nn.functional as F


class PreActBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.project = (nn.Conv2d(cin, cout, 1, stride=stride, bias=False)
                        if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        y = F.gelu(self.bn1(x))
        shortcut = self.project(y)
        y = self.conv1(y)
        y = self.conv2(F.gelu(self.bn2(y)))
        return y + shortcut


class DigitResNet(nn.Module):
    def __init__(self, in_channels, num_classes, width=12, p_drop=0.1):
        super().__init__()
        self.stem = nn.Conv2d(in_channels, width, 3, stride=2, padding=1, bias=False)
        self.stages = nn.Sequential(PreActBlock(width, width, 1),
                                    PreActBlock(width, 2 * width, 2),
                                    PreActBlock(2 * width, 2 * width, 2))
        self.norm = nn.BatchNorm2d(2 * width)
        self.drop = nn.Dropout(p_drop)
        self.classifier = nn.Linear(2 * width, num_classes)

    def forward(self, x):
        x = F.gelu(self.norm(self.stages(self.stem(x))))
        return self.classifier(self.drop(x.mean(dim=(2, 3))))
'''

# Run with `python -I`: no PYTHON* variables, no user site, not even the current folder.
FRESH_EVAL = '''
import json, sys
import numpy as np
import torch
program = torch.export.load(sys.argv[1])
model = program.module()
images = torch.from_numpy(np.load(sys.argv[2]))
labels = torch.from_numpy(np.load(sys.argv[3]))
with torch.no_grad():
    predicted = model(images).argmax(dim=1)
print(json.dumps({"accuracy": (predicted == labels).float().mean().item(),
                  "shape": list(model(images[:3]).shape),
                  "ours": sorted(m for m in sys.modules if m.startswith("computeshare"))}))
'''


def test_a_strangers_model_trains_across_two_joins_and_its_pt2_scores_alone(tmp_path):
    net = tmp_path / "strangers_net.py"
    net.write_text(STRANGERS_NET, encoding="utf-8")
    out, port = tmp_path / "session", free_ports()
    env = {"COMPUTESHARE_PIN": PIN}
    hub = cli("host", "--model", f"{net}:DigitResNet", "--dataset", "mnist-sample",
              "--workers", "2", "--rounds", str(ROUNDS), "--optimizer", "adamw", "--lr", "0.002",
              "--eval-every", "0", "--bind", "127.0.0.1", "--port", str(port), "--no-advertise",
              "--out", str(out), "--quiet", env=env)
    workers = [cli("join", f"127.0.0.1:{port}", "--device", "cpu", "--quiet", "--wait", "60",
                   "--threads", "1", "--name", f"w{i}", env=env) for i in range(2)]
    try:
        hub_out, hub_err = hub.communicate(timeout=150)
        joined = [w.communicate(timeout=60) for w in workers]
    finally:
        reap(hub, *workers)  # timed out: what each said shows with the failure
    assert hub.returncode == 0, hub_err
    for w, (wout, werr) in zip(workers, joined, strict=True):
        assert w.returncode == 0, werr
        assert "session finished" in wout
        # what the worker got, as join shows it: the model's name, and checked as a graph
        assert re.search(r"Model strangers_net\.py:DigitResNet: [\d,]+ parameters to train, "
                         r"[\d,]+ ops, graph checked", werr), werr
    session = json.loads((out / "session.json").read_text(encoding="utf-8"))
    assert session["compute"] == "graph"
    final = [r for r in metrics(out) if r["type"] == "eval" and r.get("final")]
    assert len(final) == 1 and final[0]["version"] == ROUNDS
    hub_accuracy = final[0]["accuracy"]
    printed = float(re.search(r"final test accuracy: ([\d.]+)%", hub_out).group(1))
    assert printed == pytest.approx(100 * hub_accuracy, abs=0.006)
    assert hub_accuracy > 0.6, "it did not learn"

    alone = fresh_python_accuracy(out / "trained_model.pt2", tmp_path)
    assert alone["ours"] == [], "the fresh Python imported this package"
    assert alone["shape"] == [3, 10]
    assert abs(alone["accuracy"] - hub_accuracy) <= 0.01, (alone, hub_accuracy)


def fresh_python_accuracy(program: Path, folder: Path) -> dict:
    """The program's accuracy on mnist-sample's test images (float32 N×1×28×28 in [0, 1]),
    computed by ``python -I`` with torch and numpy alone."""
    test = load_dataset("mnist-sample", "test")
    images, labels = folder / "images.npy", folder / "labels.npy"
    np.save(images, (test.images.numpy().astype(np.float32) / 255.0))
    np.save(labels, test.labels.numpy().astype(np.int64))
    done = subprocess.run([sys.executable, "-I", "-c", FRESH_EVAL, str(program), str(images),
                           str(labels)], capture_output=True, text=True, timeout=120,
                          cwd=folder)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])
