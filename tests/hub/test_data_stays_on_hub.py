"""What a worker can see of the session's data (data that never leaves the hub):
two workers of a session on a folder of images receive, between them, exactly the
training split, each sample once, and not one sample of the test split; the Welcome names
the folder, never its path or the class names (a real HubSession, in-process worker cores
on a fake clock)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers.hub import PIN
from PIL import Image
from worker.worker_sim import Sim

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.hub.config import HubConfig
from computeshare_desktop.hub.session import HubSession
from computeshare_desktop.protocol.messages import Welcome
from testbed.fake_compute import FakeFactory

CLASSES = ("secret-alpha", "secret-beta")


class Recording(FakeFactory):
    """Keeps every shard it was asked to train on, and each Welcome."""

    def __init__(self, numel: int) -> None:
        super().__init__(numel)
        self.shards: list[torch.Tensor] = []
        self.welcomes: list[Welcome] = []

    def build(self, welcome: Any, images: torch.Tensor, labels: torch.Tensor) -> Any:
        self.shards.append(images.clone())
        self.welcomes.append(welcome)
        return super().build(welcome, images, labels)


def rows(images: torch.Tensor) -> set[bytes]:
    return {bytes(image.numpy().tobytes()) for image in images}


def test_workers_get_the_training_split_once_and_never_a_test_sample(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))
    root = tmp_path / "private photos"
    rng = np.random.default_rng(3)
    for c, name in enumerate(CLASSES):
        (root / name).mkdir(parents=True)
        for i in range(30):  # noise: every image differs from every other
            pixels = rng.integers(0, 256, (18, 16), dtype=np.uint8) // 2 + 100 * c
            Image.fromarray(pixels.astype(np.uint8)).save(root / name / f"img{i}.png")
    session = HubSession(HubConfig(dataset=str(root), workers=2, rounds=4, batch_size=4,
                                   eval_every=0, test_fraction=0.2),
                         pin=PIN, hub_key="k" * 40, out_dir=tmp_path / "out")
    try:
        sim = Sim(session.core)
        factories = [Recording(session.core.server.numel) for _ in range(2)]
        for name, factory in zip((b"w1", b"w2"), factories, strict=True):
            sim.worker(name, factory=factory)
        sim.finish_all()
        train = rows(session.core.train_set.images)
        test = rows(session.test_set.images)
        assert len(train) == 48 and len(test) == 12 and not train & test
        received = [rows(shard) for f in factories for shard in f.shards]
        assert len(received) == 2 and not received[0] & received[1]  # each sample once
        assert received[0] | received[1] == train  # all of the training split
        assert not (received[0] | received[1]) & test  # none of the test split
        for factory in factories:
            (welcome,) = factory.welcomes
            said = repr(welcome)
            assert welcome.dataset == "private-photos"  # its name, made safe to show
            assert str(tmp_path) not in said and not any(c in said for c in CLASSES)
    finally:
        session.close()


def test_a_folder_too_small_for_simplenet_is_told_the_image_size_or_mlp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))
    root = tmp_path / "tiny"
    for c, name in enumerate(CLASSES):
        (root / name).mkdir(parents=True)
        for i in range(6):
            Image.fromarray(np.full((12, 10), 40 * i + c, np.uint8)).save(root / name / f"{i}.png")
    with pytest.raises(ConfigError, match=r"simplenet needs images of at least 16×16; "
                                          r"tiny's are 10×12: use --image-size 16"):
        HubSession(HubConfig(dataset=str(root), workers=1, rounds=1), pin=PIN,
                   hub_key="k" * 40, out_dir=tmp_path / "out")
    session = HubSession(HubConfig(dataset=str(root), model="mlp", workers=1, rounds=1,
                                   eval_every=0),
                         pin=PIN, hub_key="k" * 40, out_dir=tmp_path / "out2")
    try:  # mlp trains them at their own size
        assert session.info.shape == (1, 12, 10)
    finally:
        session.close()
