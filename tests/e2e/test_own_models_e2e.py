"""Models people write, as real processes: models written the way people write them train
across a real ``computeshare host`` (or ``host()`` from Python) and two real
``computeshare join`` workers on 127.0.0.1, and the ``trained_model.pt2`` the hub saves
scores what the hub reported in a Python that never imported this package.

- a function returning a bare ``nn.Sequential`` (``0.weight``, ``3.bias``: names that start
  with a digit), a CNN on a folder of PNGs this test draws and an MLP on a CSV it writes;
- the same kind of model handed to ``host(nn.Sequential(...))``;
- pytorch/examples' mnist_rnn ``Net`` shape (``nn.LSTM`` over the image's rows,
  ``BatchNorm1d``, ``Dropout2d``, ``log_softmax``) with its dropout off, round for round
  against a plain torch loop with the hub's recipe (with the dropout as published, the
  several-seed measurement: benchmarks/bench_own_rnn.py);
- an attention model (a small ViT on ``nn.TransformerEncoder``) and a torchvision family no
  other test trains end to end (``shufflenet_v2_x0_5``), each for a short run whose loss
  falls.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
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
PIN = "531864"
SEED = 0

# Written for this test, as a person writes a quick model: functions that return a bare
# nn.Sequential (parameters "0.weight", "3.bias"), the pytorch/examples mnist_rnn network's
# shape, and a small vision transformer.
MODELS = '''
import torch
from torch import nn
import torch.nn.functional as F


def small_mlp(in_features, num_classes):
    return nn.Sequential(nn.Linear(in_features, 32), nn.ReLU(), nn.Linear(32, num_classes))


def small_cnn(in_channels, num_classes):
    return nn.Sequential(
        nn.Conv2d(in_channels, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, num_classes))


class RowLSTM(nn.Module):
    """pytorch/examples mnist_rnn/main.py's Net: an LSTM reads the image row by row."""

    def __init__(self, num_classes=10, hidden=64, p1=0.25, p2=0.5):
        super().__init__()
        self.rnn = nn.LSTM(input_size=28, hidden_size=hidden, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(hidden)
        self.dropout1 = nn.Dropout2d(p1)
        self.dropout2 = nn.Dropout2d(p2)
        self.fc1 = nn.Linear(hidden, 32)
        self.fc2 = nn.Linear(32, num_classes)

    def forward(self, input):
        input = input.reshape(-1, 28, 28)
        output, _ = self.rnn(input)
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        return F.log_softmax(output, dim=1)


def still_row_lstm(num_classes):
    """The same network with its dropout off: nothing random is left in a step."""
    return RowLSTM(num_classes, p1=0.0, p2=0.0)


class TinyViT(nn.Module):
    """Patches, a class token, learned positions, a 2-layer nn.TransformerEncoder."""

    def __init__(self, in_channels, num_classes, image_size, patch=7, dim=32):
        super().__init__()
        self.embed = nn.Conv2d(in_channels, dim, patch, stride=patch)
        count = (image_size // patch) ** 2
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, count + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        tokens = self.embed(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], dim=1) + self.pos
        return self.head(self.norm(self.encoder(tokens)[:, 0]))
'''

# Run with `python -I`: no PYTHON* variables, no user site, not even the current folder.
FRESH_EVAL = '''
import json, sys
import numpy as np
import torch
program = torch.export.load(sys.argv[1])
model = program.module()
inputs = torch.from_numpy(np.load(sys.argv[2]))
labels = torch.from_numpy(np.load(sys.argv[3]))
with torch.no_grad():
    predicted = model(inputs).argmax(dim=1)
    again = model(inputs[:3])
print(json.dumps({"accuracy": (predicted == labels).float().mean().item(),
                  "shape": list(again.shape),
                  "ours": sorted(m for m in sys.modules if m.startswith("computeshare"))}))
'''

# ----------------------------------------------------------------- data the test writes
SIDE = 28
SHAPES = ("disc", "ring", "square", "frame", "plus", "cross", "hbars", "vbars", "triangle",
          "diamond")


def shape_mask(name: str, cx: int, cy: int, r: int) -> np.ndarray:
    """One of ten shapes of radius ``r`` around (cx, cy) on a SIDE × SIDE canvas."""
    y, x = np.mgrid[0:SIDE, 0:SIDE]
    dx, dy = x - cx, y - cy
    d, box = np.hypot(dx, dy), np.maximum(abs(dx), abs(dy))
    masks = {
        "disc": d <= r, "ring": (d <= r) & (d >= r - 1.5),
        "square": box <= r, "frame": (box <= r) & (box >= r - 1),
        "plus": ((abs(dx) <= 1) | (abs(dy) <= 1)) & (box <= r),
        "cross": ((abs(dx - dy) <= 1) | (abs(dx + dy) <= 1)) & (box <= r),
        "hbars": (y % 4 < 2) & (box <= r), "vbars": (x % 4 < 2) & (box <= r),
        "triangle": (dy <= r) & (dy >= -r) & (abs(dx) <= (dy + r) / 2),
        "diamond": abs(dx) + abs(dy) <= r,
    }
    return masks[name]


def shape_images(per_class: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """uint8 grayscale SIDE × SIDE images of the ten shapes, of random size and place, over
    noise; and their labels (SHAPES' order)."""
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for label, name in enumerate(SHAPES):
        for _ in range(per_class):
            pixels = rng.integers(0, 70, (SIDE, SIDE)).astype(np.float64)
            r = int(rng.integers(6, 10))
            mask = shape_mask(name, int(rng.integers(r, SIDE - r)),
                              int(rng.integers(r, SIDE - r)), r)
            pixels[mask] = rng.integers(170, 256)
            images.append(pixels.astype(np.uint8))
            labels.append(label)
    return np.stack(images), np.array(labels)


def write_shape_folder(root: Path, per_class: int = 40) -> Path:
    """PNGs in one folder per class (the folder layout ``--dataset`` takes)."""
    images, labels = shape_images(per_class, seed=25)
    for i, (pixels, label) in enumerate(zip(images, labels, strict=True)):
        folder = root / SHAPES[label]
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels, mode="L").save(folder / f"{i:04d}.png")
    return root


def write_table(path: Path, rows: int = 800) -> Path:
    """A CSV of 5 numeric features in their own units and a text column, labelled by which
    of 4 regions of the plane (a, b) the row falls in; c and d are noise."""
    rng = np.random.default_rng(52)
    a, b = rng.normal(50, 10, rows), rng.normal(-3, 2, rows)
    c, d, e = rng.normal(size=rows), rng.uniform(0, 1000, rows), rng.normal(size=rows)
    site = rng.choice(["north", "south"], rows)
    za, zb = (a - 50) / 10, (b + 3) / 2
    label = np.where(za + zb > 0, np.where(za - zb > 0, "east", "north"),
                     np.where(za - zb > 0, "south", "west"))
    lines = ["a,b,c,d,e,site,kind"]
    lines += [f"{a[i]:.3f},{b[i]:.4f},{c[i]:.4f},{d[i]:.2f},{e[i]:.4f},{site[i]},{label[i]}"
              for i in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------- sessions
@dataclass
class Session:
    out: Path
    accuracy: float  # the hub's final test accuracy (metrics.jsonl)
    loss: float
    rounds: list[dict[str, Any]]  # metrics.jsonl's round records
    worker_err: list[str]  # what each join wrote to stderr
    seconds: float


def across_two_joins(tmp: Path, env: dict[str, str], *args: str, rounds: int,
                     timeout_s: float = 150) -> Session:
    """A real host and two real joins on 127.0.0.1 until the session ends; every process
    must exit 0."""
    out, port = tmp / "session", free_ports()
    began = time.monotonic()
    hub = cli("host", *args, "--workers", "2", "--rounds", str(rounds), "--preset", "lan",
              "--no-balance", "--seed", str(SEED), "--eval-every", "0", "--bind",
              "127.0.0.1", "--port", str(port), "--no-advertise", "--out", str(out),
              "--quiet", "-v", env=env)
    workers = joins(port, env)
    hub_out, hub_err, joined = finish(hub, workers, timeout_s)
    said = "\n".join(f"{p.args[3]} exit {p.returncode}: {err[-2000:]}" for p, err in zip(
        (hub, *workers), (hub_err, *(e for _, e in joined)), strict=True))
    assert [p.returncode for p in (hub, *workers)] == [0, 0, 0], said
    assert all("session finished" in wout for wout, _ in joined), said
    records = metrics(out)
    final = [r for r in records if r["type"] == "eval" and r.get("final")]
    assert len(final) == 1 and final[0]["version"] == rounds, said
    printed = float(re.search(r"final test accuracy: ([\d.]+)%", hub_out).group(1))
    assert printed == pytest.approx(100 * final[0]["accuracy"], abs=0.006)
    return Session(out, final[0]["accuracy"], final[0]["test_loss"],
                   [r for r in records if r["type"] == "round"], [e for _, e in joined],
                   time.monotonic() - began)


def joins(port: int, env: dict[str, str]) -> list[subprocess.Popen[str]]:
    return [cli("join", f"127.0.0.1:{port}", "--device", "cpu", "--quiet", "-v", "--wait",
                "90", "--threads", "1", "--name", f"w{i}", env=env) for i in range(2)]


def finish(hub: subprocess.Popen[str] | None, workers: list[subprocess.Popen[str]],
           timeout_s: float) -> tuple[str, str, list[tuple[str, str]]]:
    """Wait for the hub (None: it runs in this process, and the workers end with it) and
    its workers; a worker that fails ends the wait at once, so its reason shows."""
    deadline = time.monotonic() + timeout_s
    try:
        running = [p for p in (hub, *workers) if p is not None]
        while any(p.poll() is None for p in running) and time.monotonic() < deadline \
                and not any(w.poll() for w in workers):
            time.sleep(0.2)
        if any(w.poll() for w in workers) and hub is not None:
            hub.kill()
        hub_out, hub_err = hub.communicate(timeout=max(1.0, deadline - time.monotonic())) \
            if hub is not None else ("", "")
        if hub is not None and hub.returncode:  # its workers would wait for it
            for w in workers:
                w.kill()
        joined = [w.communicate(timeout=max(1.0, deadline - time.monotonic()))
                  for w in workers]
    finally:
        reap(*(p for p in (hub, *workers) if p is not None))  # timed out: what each said
    return hub_out, hub_err, joined


def graph_checked(err: str, label: str) -> None:
    """join said what it got: the model's name, and checked as a graph."""
    assert re.search(rf"Model {re.escape(label)}: [\d,]+ parameters to train, [\d,]+ ops, "
                     rf"graph checked", err), err


def fresh_python(program: Path, inputs: torch.Tensor, labels: torch.Tensor,
                 folder: Path) -> dict[str, Any]:
    """``program``'s accuracy on ``inputs`` (what trained_model.pt2 takes: images in [0, 1],
    a table's raw values), computed by ``python -I`` with torch and numpy alone."""
    x, y = folder / "inputs.npy", folder / "labels.npy"
    np.save(x, inputs.numpy().astype(np.float32))
    np.save(y, labels.numpy().astype(np.int64))
    done = subprocess.run([sys.executable, "-I", "-c", FRESH_EVAL, str(program), str(x),
                           str(y)], capture_output=True, text=True, timeout=120, cwd=folder)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["ours"] == [], "the fresh Python imported this package"
    return result


def scores_alone(session: Session, spec: str, folder: Path, classes: int,
                 **load: Any) -> float:
    """trained_model.pt2 scored alone on the session's test split: the hub's accuracy."""
    from computeshare_desktop.data.info import raw_inputs
    from computeshare_desktop.data.prepared import load_data

    test = load_data(spec, **load)[1]  # the split the hub made, from the same cache
    alone = fresh_python(session.out / "trained_model.pt2", raw_inputs(test.images, test.info),
                         test.labels, folder)
    assert alone["shape"] == [3, classes]
    assert abs(alone["accuracy"] - session.accuracy) <= 0.5 / len(test), (alone, session)
    return alone["accuracy"]


def evaluated(model_file: Path, **preparation: Any) -> float:
    """What ``computeshare evaluate`` says of a saved model (in this process): the
    session's model and data as session.json names them, prepared as it did."""
    from computeshare_desktop.evaluation import evaluate_file
    from computeshare_desktop.predict import read_classes

    config = json.loads((model_file.parent / "session.json").read_text(encoding="utf-8"))["config"]
    return evaluate_file(model_file, config["model"], config["dataset"], **preparation,
                         classes=read_classes(model_file.parent / "classes.json") or ()
                         ).accuracy


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Private folders for the processes and for this test's own reads (the same cache)."""
    values = {"COMPUTESHARE_PIN": PIN, "COMPUTESHARE_DATA_DIR": str(tmp_path / "datasets"),
              "COMPUTESHARE_HOME": str(tmp_path / "home"),
              "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return values


@pytest.fixture
def models(tmp_path: Path) -> Path:
    path = tmp_path / "own_models.py"
    path.write_text(MODELS, encoding="utf-8")
    return path


# ----------------------------------------------------------------- bare nn.Sequential
def test_a_bare_sequential_cnn_trains_on_an_image_folder_across_two_joins(tmp_path, env,
                                                                          models):
    folder = write_shape_folder(tmp_path / "shapes")
    session = across_two_joins(tmp_path, env, "--model", f"{models}:small_cnn", "--dataset",
                               str(folder), "--test-fraction", "0.25", "--batch-size", "16",
                               "--lr", "0.02", "--augment", "none", rounds=120)
    for err in session.worker_err:
        graph_checked(err, "own_models.py:small_cnn")
    assert session.accuracy > 0.6, "it did not learn (chance: 10%)"
    scores_alone(session, str(folder), tmp_path, len(SHAPES), test_fraction=0.25)
    # evaluate builds small_cnn again for the .pth (its keys 0.weight ... 7.bias)
    for saved in ("trained_model.pth", "trained_model.pt2"):
        assert evaluated(session.out / saved, test_fraction=0.25) == pytest.approx(
            session.accuracy)
    from computeshare_desktop.predict import Prediction, load_predictor

    predictor = load_predictor(session.out / "trained_model.pt2", "", None)
    said = predictor.predict(sorted((folder / "ring").iterdir())[:5], 3)
    assert all(isinstance(p, Prediction) for p in said), said
    assert {g.label for p in said if isinstance(p, Prediction) for g in p.top} <= set(SHAPES)


def test_a_bare_sequential_mlp_trains_on_a_csv_table_across_two_joins(tmp_path, env, models):
    table = write_table(tmp_path / "regions.csv")
    session = across_two_joins(tmp_path, env, "--model", f"{models}:small_mlp", "--dataset",
                               str(table), "--label", "kind", "--batch-size", "16", "--lr",
                               "0.05", rounds=80)
    for err in session.worker_err:
        graph_checked(err, "own_models.py:small_mlp")
    assert session.accuracy > 0.8, "it did not learn (chance: about 25%)"
    scores_alone(session, str(table), tmp_path, 4, label="kind")


# ----------------------------------------------------------------- host(nn.Sequential(...))
def from_python(tmp: Path, model: torch.nn.Module, train: str, rounds: int,
                **options: Any) -> tuple[Any, list[str]]:
    """``host(model, train)`` in this process and two real joins, until the session ends:
    (its Result, what each join wrote to stderr)."""
    from computeshare_desktop import host

    run = host(model, train=train, rounds=rounds, workers=2, port=0, bind="127.0.0.1",
               advertise=False, quiet=True, pin=PIN, preset="lan", balance=False, seed=SEED,
               eval_every=0, out_dir=tmp / "session", **options)
    workers = [cli("join", run.address, "--device", "cpu", "--quiet", "-v", "--wait", "90",
                   "--threads", "1", "--name", f"w{i}", env={"COMPUTESHARE_PIN": PIN})
               for i in range(2)]
    try:
        result = run.wait(150)
    except TimeoutError:
        result = None
    finally:
        run.stop()  # a failure: nothing left running
        _, _, joined = finish(None, workers, 60)
    if result is None:
        done = [r for r in metrics(tmp / "session") if r["type"] == "round"]
        raise AssertionError(f"the session still ran after 150 s, at round {len(done)}; "
                             f"the joins said: {[e[-3000:] for _, e in joined]}")
    assert [w.returncode for w in workers] == [0, 0], [e[-3000:] for _, e in joined]
    return result, [e for _, e in joined]


def check_python_session(result: Any, given: torch.nn.Module, errs: list[str]) -> None:
    """What host() gave back and what the workers saw: a trained copy of the user's
    nn.Sequential, named python:Sequential (not torch's own container.py), its .pth
    loading into the same nn.Sequential."""
    for err in errs:
        graph_checked(err, "python:Sequential")
    assert type(result.model) is torch.nn.Sequential and result.model is not given
    assert not result.stopped and result.metrics.rounds == result.metrics.history[-1].version
    session = json.loads((result.out_dir / "session.json").read_text(encoding="utf-8"))
    assert session["config"]["model"] == "python:Sequential"
    assert session["compute"] == "graph"
    saved = torch.load(result.out_dir / "trained_model.pth", weights_only=True)
    assert set(saved) == set(given.state_dict())  # 0.weight, 0.bias, 3.weight...
    given.load_state_dict(saved)
    assert all(torch.equal(saved[k], v) for k, v in result.model.state_dict().items())


def test_host_a_bare_sequential_from_python_on_an_image_folder_with_two_joins(tmp_path, env):
    folder = write_shape_folder(tmp_path / "shapes")
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(16 * 7 * 7, len(SHAPES)))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result, errs = from_python(tmp_path, model, str(folder), 120, test_fraction=0.25,
                               batch_size=16, lr=0.02, augment="none")
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # untouched
    check_python_session(result, model, errs)
    assert result.metrics.accuracy > 0.6, "it did not learn (chance: 10%)"
    final = [r for r in metrics(result.out_dir) if r["type"] == "eval" and r.get("final")]
    session = Session(result.out_dir, final[0]["accuracy"], final[0]["test_loss"], [], errs, 0)
    assert session.accuracy == pytest.approx(result.metrics.accuracy)
    scores_alone(session, str(folder), tmp_path, len(SHAPES), test_fraction=0.25)
    assert evaluated(result.out_dir / "trained_model.pt2", test_fraction=0.25) == \
        pytest.approx(session.accuracy)
    from computeshare_desktop.errors import ConfigError

    with pytest.raises(ConfigError, match=r"handed to host\(\) from Python"):
        evaluated(result.out_dir / "trained_model.pth", test_fraction=0.25)


def test_host_a_bare_sequential_from_python_on_a_csv_table_with_two_joins(tmp_path, env):
    table = write_table(tmp_path / "regions.csv")
    features = 5 + 2  # a..e, and site one-hot: site=north, site=south
    model = torch.nn.Sequential(torch.nn.Linear(features, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4))
    result, errs = from_python(tmp_path, model, str(table), 80, label_column="kind",
                               batch_size=16, lr=0.05)
    check_python_session(result, model, errs)
    assert result.metrics.accuracy > 0.8, "it did not learn (chance: about 25%)"
    session = Session(result.out_dir, result.metrics.accuracy, 0.0, [], errs, 0)
    scores_alone(session, str(table), tmp_path, 4, label="kind")


# ----------------------------------------------------------------- pytorch/examples' LSTM
RNN_BATCH, RNN_LR = 32, 0.05  # per worker; --lr (the hub steps at 0.1 on 64 samples)


def plain_loop(spec: str, rounds: int, losses: list[float]) -> tuple[float, float]:
    """``spec`` trained alone on mnist-sample with the hub's recipe: its initial weights
    (the hub's builder and seed); each round, the two workers' batches of 32 through the
    model one after the other (BatchNorm normalizes each worker's own samples, as on the
    workers), their mean loss back-propagated and the running statistics set to the mean
    of the two batches' (the hub's combination); one step of SGD with the hub's momentum
    at the rate it steps with (``--lr`` × 64 / 32, times the cosine schedule's factor of
    that version). ``losses`` gets each step's training loss. (test accuracy, loss)"""
    from computeshare_desktop.data import load_dataset
    from computeshare_desktop.evaluation import evaluate
    from computeshare_desktop.hub.config import HubConfig
    from computeshare_desktop.hub.lr_schedule import LrSchedule
    from computeshare_desktop.hub.user_model import build_hub_model

    train, test = load_dataset("mnist-sample", "train"), load_dataset("mnist-sample", "test")
    config = HubConfig(model=spec, dataset="mnist-sample", seed=SEED, schedule="cosine",
                       rounds=rounds, batch_size=RNN_BATCH, lr=RNN_LR)
    net = build_hub_model(config, train.info)
    schedule = LrSchedule(config.schedule, config.warmup, config.rounds)
    opt = torch.optim.SGD(net.parameters(), lr=RNN_LR, momentum=config.momentum)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each join computes; two threads on a busy machine: 30x
    try:
        net.train()
        for step in range(rounds):
            for group in opt.param_groups:
                group["lr"] = RNN_LR * 2 * schedule.factor(step)
            losses.append(_step(net, opt, train, step))
    finally:
        torch.set_num_threads(threads)
    return evaluate(net, test)


def _step(net: torch.nn.Module, opt: torch.optim.Optimizer, train: Any, step: int) -> float:
    """One of plain_loop's steps, as two workers take it; its training loss."""
    from computeshare_desktop.evaluation import batch_loss
    from computeshare_desktop.sampling import shard_indices, stream_positions

    stats = [b for name, b in net.named_buffers() if name.endswith(("running_mean",
                                                                    "running_var"))]
    start, ends, total = [b.clone() for b in stats], [], 0.0
    opt.zero_grad()
    for s in range(2):
        shard = shard_indices(len(train), 2, s, SEED)
        idx = shard[stream_positions(len(shard), SEED, s, step * RNN_BATCH, RNN_BATCH)]
        for b, s0 in zip(stats, start, strict=True):
            b.copy_(s0)
        loss = batch_loss(net, train.images[idx], train.labels[idx], train.info) / 2
        loss.backward()
        total += loss.item()
        ends.append([b.clone() for b in stats])
    with torch.no_grad():
        for k, b in enumerate(stats):
            b.copy_((ends[0][k] + ends[1][k]) / 2)
    opt.step()
    return total


def test_pytorch_examples_lstm_without_dropout_matches_a_plain_loop_round_for_round(
        tmp_path, env, models):
    """mnist_rnn's Net (LSTM over the 28 rows, BatchNorm1d, log_softmax) with its dropout
    off, on real MNIST digits: two workers take the loop's steps. The first rounds' losses
    agree to float rounding (a wrong gradient, a BatchNorm statistic combined wrongly or a
    recipe off by a factor shows at once); later ones drift only as float sums in another
    order do; the test accuracy within 1 point (measured: 87.4% and 87.3% after 200). With
    its dropout as published, the masks are random and the comparison takes 1,200 rounds
    and several seeds: benchmarks/bench_own_rnn.py (docs/BENCHMARKS-OWN-MODEL.md, 4)."""
    rounds = 200
    session = across_two_joins(tmp_path, env, "--model", f"{models}:still_row_lstm",
                               "--dataset", "mnist-sample", "--batch-size", str(RNN_BATCH),
                               "--lr", str(RNN_LR), "--schedule", "cosine", rounds=rounds,
                               timeout_s=200)
    for err in session.worker_err:
        graph_checked(err, "own_models.py:still_row_lstm")
    losses: list[float] = []
    accuracy, loss = plain_loop(f"{models}:still_row_lstm", rounds, losses)
    hub = [r["loss"] for r in session.rounds]
    assert len(hub) == rounds and [r["samples"] for r in session.rounds] == [64] * rounds
    assert hub[:20] == pytest.approx(losses[:20], abs=1e-4)
    assert np.mean(hub[-50:]) == pytest.approx(np.mean(losses[-50:]), rel=0.05)
    assert session.accuracy > 0.8, "it did not learn"
    assert abs(session.accuracy - accuracy) <= 0.01, (session.accuracy, accuracy)
    assert session.loss == pytest.approx(loss, rel=0.05)
    scores_alone(session, "mnist-sample", tmp_path, 10)  # the unrolled LSTM, in eval mode


# ----------------------------------------------------------------- attention, torchvision
def short_run(tmp: Path, env: dict[str, str], model: str, label: str,
              rounds: int) -> Session:
    """A short session on mnist-sample (AdamW: it learns in few rounds) whose training
    loss falls, and whose trained_model.pt2 scores the hub's accuracy alone."""
    session = across_two_joins(tmp, env, "--model", model, "--dataset", "mnist-sample",
                               "--batch-size", "32", "--optimizer", "adamw", "--lr", "0.003",
                               rounds=rounds, timeout_s=240)
    for err in session.worker_err:
        graph_checked(err, label)
    losses = [r["loss"] for r in session.rounds]
    assert len(losses) == rounds and all(r["contributors"] == 2 for r in session.rounds)
    assert np.mean(losses[-10:]) < 0.7 * np.mean(losses[:10]), losses
    scores_alone(session, "mnist-sample", tmp, 10)
    return session


def test_a_small_vision_transformer_trains_across_two_joins(tmp_path, env, models):
    """Patches, a class token, positions and nn.TransformerEncoder (multi-head attention,
    LayerNorm, GELU-free MLP, dropout): the layers that once exported to views with
    storage offsets."""
    session = short_run(tmp_path, env, f"{models}:TinyViT", "own_models.py:TinyViT", 80)
    assert session.accuracy > 0.3, "it did not learn (chance: 10%)"


def test_torchvision_shufflenet_trains_across_two_joins(tmp_path, env):
    """A torchvision family no other test trains end to end (channel shuffle, grouped and
    depthwise convolutions, BatchNorm everywhere), refused before the fix for its views."""
    short_run(tmp_path, env, "torchvision:shufflenet_v2_x0_5",
              "torchvision:shufflenet_v2_x0_5", 40)
