"""A user's own data, as real processes: data no one on the project chose trains across
a real ``computeshare host`` and two ``computeshare join`` workers with a model from a file,
reaches within 1 point of a plain torch loop on the same split (the same model, initial
weights and samples, one process), and no worker is sent data after its first download
(metrics.jsonl's data_bytes: every round after the first moves none).

The cases: a folder of PNGs in class folders (colour shapes on noise, 24 x 20, split by
--test-fraction); a CSV whose label is text (--label); a Hugging Face ``save_to_disk``
DatasetDict with its own train and test splits.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from helpers.net import cli, free_ports, metrics, reap

pytestmark = pytest.mark.slow
PIN = "864213"
BATCH = 16  # per worker
LR = 0.05  # for one worker's batch: the hub steps at LR x 2 on the mean of the two
MOMENTUM = 0.9  # the hub's SGD default
SEED = 0

# Written for this test: no normalization layer and no dropout, so the two workers' round
# is the loop's step on the union of their batches (up to the order of float sums).
NET = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.head = nn.Linear(16, num_classes)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.relu(self.conv2(x))
        return self.head(x.mean(dim=(2, 3)))


class TableNet(nn.Module):
    def __init__(self, in_features, num_classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(in_features, 32), nn.Tanh(),
                                  nn.Linear(32, num_classes))

    def forward(self, x):
        return self.body(x)
'''

# ----------------------------------------------------------------- data the test writes
W, H = 24, 20  # not square, not a size any built-in expects
SHAPES = {"amber_disc": (230, 160, 20), "cyan_cross": (20, 200, 210),
          "magenta_ring": (210, 30, 190), "olive_bars": (120, 130, 20)}


def _mask(name: str, cx: int, cy: int, r: int) -> np.ndarray:
    y, x = np.mgrid[0:H, 0:W]
    d = np.hypot(x - cx, y - cy)
    if name.endswith("disc"):
        return d <= r
    if name.endswith("ring"):
        return (d <= r) & (d >= r - 2)
    if name.endswith("cross"):
        return (((abs(x - cx) <= 1) & (abs(y - cy) <= r))
                | ((abs(y - cy) <= 1) & (abs(x - cx) <= r)))
    return ((y % 4) < 2) & (abs(x - cx) <= r) & (abs(y - cy) <= r)


def write_shapes(root: Path, per_class: int = 90) -> Path:
    """RGB PNGs in class folders: a tinted shape of random size and place over noise."""
    rng = np.random.default_rng(19)
    for name, colour in SHAPES.items():
        (root / name).mkdir(parents=True)
        for j in range(per_class):
            pixels = rng.integers(0, 90, (H, W, 3)).astype(np.float64)
            r = int(rng.integers(4, 8))
            mask = _mask(name, int(rng.integers(r, W - r)), int(rng.integers(r, H - r)), r)
            tint = np.clip(np.array(colour) + rng.integers(-40, 41, 3), 0, 255)
            pixels[mask] = 0.7 * tint + 0.3 * pixels[mask]
            Image.fromarray(pixels.astype(np.uint8)).save(root / name / f"{j:03d}.png")
    return root


def write_table(path: Path, rows: int = 600) -> Path:
    """A CSV of 6 numeric features and a text label (the last column)."""
    rng = np.random.default_rng(23)
    x = rng.normal(size=(rows, 6))
    score = x[:, 0] + 0.8 * x[:, 1] - 0.6 * x[:, 2] + 0.2 * rng.normal(size=rows)
    labels = np.where(score > 0.6, "high", np.where(score < -0.6, "low", "middle"))
    lines = ["a,b,c,d,e,f,grade"]
    lines += [",".join(f"{v:.4f}" for v in row) + f",{label}" for row, label in zip(
        x, labels, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_hf(root: Path) -> Path:
    """A Hugging Face DatasetDict (train and test) of the shape images, saved to disk."""
    import datasets

    pngs = write_shapes(root.parent / "hf_source", per_class=60)
    names = sorted(SHAPES)
    rows: dict[str, list[Any]] = {"image": [], "label": []}
    for label, name in enumerate(names):
        for file in sorted((pngs / name).iterdir()):
            rows["image"].append(Image.open(file).convert("RGB"))
            rows["label"].append(label)
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=names)})
    full = datasets.Dataset.from_dict(rows, features=features)
    split = full.train_test_split(test_size=0.25, seed=3, stratify_by_column="label")
    split.save_to_disk(str(root))
    return root


# ----------------------------------------------------------------- the two ways to train
@dataclass
class Session:
    accuracy: float  # the hub's final test accuracy
    loss: float  # and test loss
    rounds: list[dict[str, Any]]  # metrics.jsonl's round records


def across_two_workers(tmp: Path, env: dict[str, str], model: str, rounds: int,
                       data: list[str]) -> Session:
    """A real host and two real joins on 127.0.0.1, until the session ends."""
    out, port = tmp / "session", free_ports()
    hub = cli("host", *data, "--model", model, "--workers", "2", "--rounds", str(rounds),
              "--batch-size", str(BATCH), "--lr", str(LR), "--preset", "lan", "--no-balance",
              "--seed", str(SEED), "--eval-every", "0", "--bind", "127.0.0.1", "--port",
              str(port), "--no-advertise", "--out", str(out), "--quiet", env=env)
    workers = [cli("join", f"127.0.0.1:{port}", "--device", "cpu", "--quiet", "--wait", "60",
                   "--threads", "1", "--name", f"w{i}", env=env) for i in range(2)]
    try:
        deadline = time.monotonic() + 120
        while hub.poll() is None and time.monotonic() < deadline and not any(
                w.poll() for w in workers):  # a worker that failed: say why at once
            time.sleep(0.2)
        if any(w.poll() for w in workers):
            hub.kill()
        hub_out, hub_err = hub.communicate(timeout=max(1.0, deadline - time.monotonic()))
        if hub.returncode:  # its workers would wait for it
            for w in workers:
                w.kill()
        joined = [w.communicate(timeout=60) for w in workers]
    finally:
        reap(hub, *workers)  # timed out: what each said shows with the failure
    said = "\n".join(f"{p.args[3]} exit {p.returncode}: {err[-1500:]}" for p, err in zip(
        (hub, *workers), (hub_err, *(e for _, e in joined)), strict=True))
    assert [p.returncode for p in (hub, *workers)] == [0, 0, 0], said
    assert all("session finished" in wout for wout, _ in joined), said
    records = metrics(out)
    final = [r for r in records if r["type"] == "eval" and r.get("final")]
    assert len(final) == 1 and final[0]["version"] == rounds
    printed = float(re.search(r"final test accuracy: ([\d.]+)%", hub_out).group(1))
    assert printed == pytest.approx(100 * final[0]["accuracy"], abs=0.006)
    return Session(final[0]["accuracy"], final[0]["test_loss"],
                   [r for r in records if r["type"] == "round"])


def plain_loop(model: str, rounds: int, spec: str, **load: Any) -> tuple[float, float, int]:
    """The same model alone: the hub's initial weights, each round's two batches as one
    step of SGD at the rate the hub steps with. (test accuracy, test loss, training
    samples)."""
    from computeshare_desktop.data.prepared import load_data
    from computeshare_desktop.evaluation import batch_loss, evaluate
    from computeshare_desktop.hub.config import HubConfig
    from computeshare_desktop.hub.user_model import build_hub_model
    from computeshare_desktop.sampling import shard_indices, stream_positions

    train, test = load_data(spec, **load)  # the split the hub made, from the same cache
    net = build_hub_model(HubConfig(model=model, dataset=spec, seed=SEED), train.info)
    opt = torch.optim.SGD(net.parameters(), lr=LR * 2, momentum=MOMENTUM)
    shards = [shard_indices(len(train), 2, s, SEED) for s in range(2)]
    net.train()
    for step in range(rounds):
        idx = torch.cat([shard[stream_positions(len(shard), SEED, s, step * BATCH, BATCH)]
                         for s, shard in enumerate(shards)])
        opt.zero_grad()
        batch_loss(net, train.images[idx], train.labels[idx], train.info).backward()
        opt.step()
    return (*evaluate(net, test), len(train))


def check(session: Session, alone: list[float], train_samples: int, sample_bytes: int) -> None:
    """Within 1 point of the loop (and the same test loss: the same training, not two
    that both saturate); the shards moved once, before the first round closed."""
    accuracy, loss = alone
    assert session.accuracy > 0.8, "it did not learn"
    assert abs(session.accuracy - accuracy) <= 0.01, (session.accuracy, accuracy)
    assert session.loss == pytest.approx(loss, rel=0.01, abs=1e-4)
    first, *later = session.rounds
    assert first["data_bytes"] >= train_samples * sample_bytes  # both shards, whole
    epoch = train_samples // 2 // BATCH  # rounds in a worker's first pass over its shard
    assert len(later) > 2 * epoch  # the session runs past both workers' second epoch
    assert [r["round"] for r in later if r["data_bytes"]] == []
    assert all(r["model_bytes"] > 0 and r["update_bytes"] > 0 for r in session.rounds)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Private folders for the processes and for this test's own loop (the same cache)."""
    values = {"COMPUTESHARE_PIN": PIN, "COMPUTESHARE_DATA_DIR": str(tmp_path / "datasets"),
              "COMPUTESHARE_HOME": str(tmp_path / "home"),
              "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return values


@pytest.fixture
def net(tmp_path: Path) -> Path:
    path = tmp_path / "net.py"
    path.write_text(NET, encoding="utf-8")
    return path


def test_a_folder_of_pngs_trains_across_two_joins_like_one_machine(tmp_path, env, net):
    folder = write_shapes(tmp_path / "shapes")
    rounds, load = 40, {"image_size": 0, "test_fraction": 0.25}
    session = across_two_workers(tmp_path, env, f"{net}:Net", rounds,
                                 ["--dataset", str(folder), "--test-fraction", "0.25"])
    *alone, samples = plain_loop(f"{net}:Net", rounds, str(folder), **load)
    assert samples == 4 * (90 - 23)  # stratified: 23 of each class's 90 held out
    check(session, alone, samples, 3 * H * W)


def test_a_csv_with_a_text_label_trains_across_two_joins_like_one_machine(tmp_path, env, net):
    table = write_table(tmp_path / "grades.csv")
    rounds = 40
    session = across_two_workers(tmp_path, env, f"{net}:TableNet", rounds,
                                 ["--dataset", str(table), "--label", "grade"])
    *alone, samples = plain_loop(f"{net}:TableNet", rounds, str(table), label="grade")
    check(session, alone, samples, 6 * 4)


def test_a_hugging_face_folder_trains_across_two_joins_like_one_machine(tmp_path, env, net):
    pytest.importorskip("datasets")  # the hf extra (in the test extra)
    folder = write_hf(tmp_path / "hf_shapes")
    rounds = 30
    session = across_two_workers(tmp_path, env, f"{net}:Net", rounds,
                                 ["--dataset", str(folder)])
    *alone, samples = plain_loop(f"{net}:Net", rounds, str(folder))
    assert samples == 180
    check(session, alone, samples, 3 * H * W)
