"""The Python API's data: ``host()`` takes a spec string for ``train=``
and ``test=`` (tested with a session in test_test_spec.py), and a map-style dataset of
(1-D row, label) items is read as a table: float32 rows standardized with the training
rows' statistics."""

from __future__ import annotations

import json

import pytest
import torch

from computeshare_desktop.data.mapped import hold_out, read_dataset
from computeshare_desktop.errors import ConfigError


def rows(count: int, features: int = 3, seed: int = 0) -> list[tuple[torch.Tensor, int]]:
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(count, features, generator=generator) * 5 + 10
    return [(values[i], int(values[i, 0] > 10)) for i in range(count)]


def test_rows_are_a_table_standardized_on_the_training_rows():
    train = read_dataset(rows(40), name="python:Rows", classes=("low", "high"))
    info = train.info
    assert info.kind == "table" and info.shape == (3,) and info.classes == ("low", "high")
    assert train.images.dtype == torch.float32 and train.images.shape == (40, 3)
    assert train.images.mean(dim=0).abs().max() < 1e-4
    assert (train.images.std(dim=0, correction=0) - 1).abs().max() < 1e-3
    assert abs(info.mean[0] - 10) < 3 and abs(info.std[0] - 5) < 3
    test = read_dataset(rows(10, seed=1), name="python:Rows", info=info, what="test")
    assert test.info is info
    raw = torch.stack([r for r, _ in rows(10, seed=1)])
    expected = (raw.double() - torch.tensor(info.mean, dtype=torch.float64)) / torch.tensor(
        info.std, dtype=torch.float64)
    assert torch.allclose(test.images, expected.float(), atol=1e-5)
    kept, held = hold_out(train, 0.25, seed=0)
    assert len(kept) == 30 and len(held) == 10 and held.info is info


def test_rows_that_do_not_fit_are_refused():
    with pytest.raises(ConfigError, match="every row needs as many finite numbers"):
        read_dataset(rows(3) + [(torch.tensor([1.0, float("nan"), 2.0]), 0)], name="r")
    with pytest.raises(ConfigError, match="every row needs as many"):
        read_dataset(rows(3) + [(torch.ones(4), 0)], name="r")
    info = read_dataset(rows(4), name="r").info
    with pytest.raises(ConfigError, match="the test rows are 2, the training data 3"):
        read_dataset(rows(2, features=2), name="r", info=info, what="test")
    images = read_dataset([(torch.zeros(1, 4, 4), 0), (torch.ones(1, 4, 4), 1)], name="i")
    with pytest.raises(ConfigError, match="the test rows"):
        read_dataset(rows(2), name="r", info=images.info, what="test")


def test_a_session_trains_the_built_in_mlp_on_rows_given_from_python(tmp_path, monkeypatch):
    from computeshare_desktop import host

    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COMPUTESHARE_PIN", raising=False)
    values = torch.randn(300, 6, generator=torch.Generator().manual_seed(0)) * 3 + 5
    items = [(values[i], int(values[i, 0] + values[i, 1] > 10)) for i in range(300)]
    run = host("mlp", items, rounds=40, workers=1, this_machine_trains=True, eval_every=0,
               out_dir=tmp_path / "run", port=0, bind="127.0.0.1", advertise=False,
               quiet=True, preset="lan", batch_size=32, lr=0.05, classes=["no", "yes"])
    result = run.wait(60)
    assert result.metrics.accuracy is not None and result.metrics.accuracy > 0.85
    classes = json.loads((result.out_dir / "classes.json").read_text(encoding="utf-8"))
    assert classes == ["no", "yes"]
