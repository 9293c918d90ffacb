"""A folder of images trains a session: a user's own model on PNGs in class
folders, through the Python API in this process and through the real commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from computeshare_desktop import host
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.events import LogLine

from helpers.cli import run_cli
from helpers.net import cli, free_ports, reap
from helpers.nets import BandNet

CLASSES = ("high", "low", "middle")  # sorted: the band's row is 0, 8 and 4 for 0, 1, 2
ROWS = {"high": 0, "middle": 4, "low": 8}

MODEL = '''
import torch
from torch import nn


class BandNet(nn.Module):
    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.head = nn.Linear(4 * 12 * 12, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).flatten(1))
'''


def write_bands(root: Path, per_class: int = 20) -> Path:
    """12×12 gray PNGs: noise plus a bright band whose row says the class."""
    rng = np.random.default_rng(0)
    for name in CLASSES:
        (root / name).mkdir(parents=True)
        for j in range(per_class):
            pixels = rng.integers(0, 100, (12, 12), dtype=np.uint8)
            pixels[ROWS[name]:ROWS[name] + 4] += 150
            Image.fromarray(pixels).save(root / name / f"{j}.png")
    return root


@pytest.fixture(autouse=True)
def private_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "datasets"))
    monkeypatch.delenv("COMPUTESHARE_PIN", raising=False)


LOOPBACK = dict(port=0, bind="127.0.0.1", advertise=False, quiet=True, preset="lan",
                batch_size=16, lr=0.05)


def test_a_folder_trains_a_users_model_and_evaluate_reads_it_again(tmp_path, capsys):
    folder = write_bands(tmp_path / "bands")
    run = host(BandNet(), str(folder), rounds=40, workers=1, this_machine_trains=True,
               eval_every=0, out_dir=tmp_path / "run", **LOOPBACK)
    result = run.wait(60)
    assert result.metrics.accuracy is not None and result.metrics.accuracy > 0.8
    lines = [e.text for e in run.events() if isinstance(e, LogLine)]
    assert "Preparing bands: 60 of 60 images" in lines, lines  # the CLI writes each
    classes = json.loads((result.out_dir / "classes.json").read_text(encoding="utf-8"))
    assert classes == list(CLASSES)
    config = json.loads((result.out_dir / "session.json").read_text(encoding="utf-8"))
    assert config["config"]["dataset"] == str(folder) and config["config"]["image_size"] == 0
    capsys.readouterr()
    assert run_cli(["evaluate", str(result.out_dir / "trained_model.pt2"), "--json"]) == 0
    score = json.loads(capsys.readouterr().out)
    assert score["samples"] == 6 and score["accuracy"] == pytest.approx(
        result.metrics.accuracy, abs=1e-6)


def test_one_class_is_refused_before_the_session_opens(tmp_path):
    folder = tmp_path / "one"
    write_bands(folder)
    for name in CLASSES[1:]:
        for file in (folder / name).iterdir():
            file.unlink()
    with pytest.raises(ConfigError, match="1 class folder"):
        host(BandNet(), str(folder), rounds=5, workers=1, out_dir=tmp_path / "run",
             **LOOPBACK)
    assert not (tmp_path / "run" / "session.json").exists()


@pytest.mark.slow  # ~10 s: a real host and a real join, each a Python that imports torch
def test_host_and_join_train_on_a_folder_as_real_processes(tmp_path):
    folder = write_bands(tmp_path / "bands")
    model = tmp_path / "band_net.py"
    model.write_text(MODEL, encoding="utf-8")
    out, port = tmp_path / "run", free_ports()
    env = {"COMPUTESHARE_PIN": "864213", "COMPUTESHARE_DATA_DIR": str(tmp_path / "datasets")}
    hub = cli("host", "--dataset", str(folder), "--model", f"{model}:BandNet", "--workers", "1",
              "--rounds", "30", "--batch-size", "16", "--lr", "0.05", "--preset", "lan",
              "--eval-every", "0", "--bind", "127.0.0.1", "--port", str(port),
              "--no-advertise", "--out", str(out), "--quiet", env=env)
    worker = cli("join", f"127.0.0.1:{port}", "--device", "cpu", "--quiet", "--wait", "60",
                 "--threads", "1", env=env)
    try:
        hub_out, hub_err = hub.communicate(timeout=60)
        worker_out, worker_err = worker.communicate(timeout=30)
    finally:
        reap(hub, worker)  # timed out: what each said shows with the failure
    assert hub.returncode == 0, hub_err
    assert worker.returncode == 0, worker_err
    assert "session finished" in worker_out
    accuracy = float(re.search(r"final test accuracy: ([\d.]+)%", hub_out).group(1))
    assert accuracy > 80, hub_out
    assert (out / "trained_model.pt2").is_file()
