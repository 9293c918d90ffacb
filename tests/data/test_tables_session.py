"""A table trains a session: the built-in mlp on a CSV with a text label and a
text column, across two simulated workers (in-process cores on a fake clock), and the
exported program scores the test split from the table's raw values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.hub import make_hub

from computeshare_desktop import host
from computeshare_desktop.data.table_cache import prepare_table
from computeshare_desktop.errors import ConfigError, RejectedError
from computeshare_desktop.evaluation import data_info, evaluate, evaluate_file
from computeshare_desktop.hub.config import HubConfig
from computeshare_desktop.hub.session import HubSession
from computeshare_desktop.hub.user_model import ship_model
from computeshare_desktop.hub.exports import export_program
from computeshare_desktop.models import build_model
from computeshare_desktop.models.specs import build_model_from_spec, parse_model_spec
from computeshare_desktop.predict import load_predictor
from computeshare_desktop.protocol.messages import ShardData, Welcome
from computeshare_desktop.worker import BuiltinFactory
from computeshare_desktop.worker.download import ShardDownload
from worker.worker_sim import Sim

CLASSES = ("alpha", "beta", "gamma")


def write_table(path: Path, rows: int = 240) -> Path:
    """Three classes apart in the first two columns (in their own units: hundreds and
    thousandths), a noise column, and a text column that says nothing."""
    rng = np.random.default_rng(0)
    lines = ["height,weight,noise,region,kind"]
    for i in range(rows):
        c = i % 3
        height = 100.0 * c + rng.normal(0, 20)
        weight = 0.004 * (2 - c) + rng.normal(0, 0.001)
        lines.append(f"{height:.3f},{weight:.6f},{rng.normal():.3f},"
                     f"{('north', 'south')[i % 2]},{CLASSES[c]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_mlp_trains_on_a_table_across_two_workers_and_its_program_takes_raw_values(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))
    csv = write_table(tmp_path / "people.csv")
    table = prepare_table(csv, cache_dir=tmp_path / "cache")
    train, test = table.train, table.test
    assert train.info.shape == (5,) and train.info.classes == CLASSES
    hub = make_hub(data=train, model="mlp", workers=2, rounds=20, batch_size=16, lr=0.05)
    sim = Sim(hub)
    peers = [sim.worker(name, factory=BuiltinFactory(torch.device("cpu")))
             for name in (b"w1", b"w2")]
    sim.finish_all()
    for peer in peers:
        welcome = next(r for r in peer.replies if isinstance(r, Welcome))
        assert (welcome.data_kind, welcome.features, welcome.mean, welcome.std) == (
            "table", 5, [0.0], [1.0])  # the statistics stay on the hub
        chunks = [r for r in peer.replies if isinstance(r, ShardData)]
        assert chunks and all(c.dtype == "float32" and c.image_shape[1:] == [5]
                              for c in chunks)
        assert peer.compute.images.dtype == torch.float32
        assert peer.finish.result.pushed == 20
    model = hub.server.model
    accuracy, _ = evaluate(model, test)
    assert accuracy > 0.9
    # trained_model.pt2 takes the raw values and standardizes them inside: evaluate reads
    # the table's test split again, predict reads the table's rows by column name
    program = tmp_path / "run" / "trained_model.pt2"
    program.parent.mkdir()
    program.write_bytes(export_program(model, train.info))
    (program.parent / "classes.json").write_text(json.dumps(CLASSES), encoding="utf-8")
    score = evaluate_file(program, "mlp", str(csv))
    assert (score.samples, score.accuracy) == (len(test), pytest.approx(accuracy))
    predictor = load_predictor(program, "mlp", data_info(str(csv)))
    guesses = predictor.predict([csv], 1)
    kinds = [line.rsplit(",", 1)[1] for line in
             csv.read_text(encoding="utf-8").splitlines()[1:]]
    assert len(guesses) == len(kinds) == 240
    hits = sum(g.top[0].label == kind for g, kind in zip(guesses, kinds, strict=True))
    assert hits / len(kinds) > 0.9


@pytest.mark.parametrize("model", ["simplenet", "resnet18", "torchvision:resnet18"])
def test_models_of_images_refuse_a_table_and_say_what_to_use(tmp_path: Path,
                                                             model: str) -> None:
    info = prepare_table(write_table(tmp_path / "t.csv", 30), cache_dir=tmp_path).train.info
    with pytest.raises(ConfigError, match=r"takes images; t is a table of 5 features: use "
                                          r"--model mlp, or your own model"):
        build_model_from_spec(parse_model_spec(model), info)


def test_a_users_model_gets_in_features_and_travels_as_a_graph_of_rows(
        tmp_path: Path) -> None:
    train = prepare_table(write_table(tmp_path / "t.csv", 30), cache_dir=tmp_path).train
    info = train.info
    source = tmp_path / "net.py"
    source.write_text("from torch import nn\n\n\n"
                      "def Net(in_features: int, num_classes: int) -> nn.Module:\n"
                      "    return nn.Linear(in_features, num_classes)\n", encoding="utf-8")
    model = build_model_from_spec(parse_model_spec(f"{source}:Net"), info)
    assert tuple(model.weight.shape) == (3, 5)
    shipped = ship_model(model, HubConfig(model=f"{source}:Net"), train)
    assert shipped.graph is not None  # exported with two of the table's rows, (2, 5)
    assert sum(p.numel() for p in build_model("mlp", info).parameters()) == (
        5 * 256 + 256 + 256 * 128 + 128 + 128 * 3 + 3)


def welcome_of_a_table(features: int) -> Welcome:
    hub_welcome = dict(session_id="s", worker_id=1, token="t", shard=0, num_shards=1,
                       shard_size=4, dataset="t", model="mlp", fingerprint="f",
                       batch_size=2, seed=0, rounds=1, codec="raw", state="waiting",
                       version=0, optimizer="sgd", weight_decay=0.0, label_smoothing=0.0,
                       clip_grad=0.0, precision="auto", compute="builtin", torch="2",
                       channels=1, height=1, width=1, num_classes=2, mean=[0.0], std=[1.0])
    return Welcome(**hub_welcome, data_kind="table", features=features)


@pytest.mark.parametrize(("dtype", "shape", "match"), [
    ("uint8", [4, 5], "samples are uint8, not the float32"),
    ("float32", [4, 6], "samples are 6, not the 5"),
])
def test_the_worker_refuses_a_chunk_that_is_not_the_rows_its_welcome_said(
        dtype: str, shape: list[int], match: str) -> None:
    download = ShardDownload(welcome_of_a_table(5))
    chunk = ShardData(offset=0, total=4, image_shape=shape, dtype=dtype)  # type: ignore[arg-type]
    size = 4 * shape[1] * (4 if dtype == "float32" else 1)
    with pytest.raises(RejectedError, match=match):
        download.take(chunk, [bytes(size), bytes(32)])
    good = ShardData(offset=0, total=4, image_shape=[4, 5], dtype="float32")
    download.take(good, [torch.arange(20, dtype=torch.float32).numpy().tobytes(), bytes(32)])
    rows, labels = download.tensors()
    assert rows.dtype == torch.float32 and rows.shape == (4, 5) and float(rows[1, 0]) == 5.0


def test_a_table_that_cannot_train_is_refused_before_the_session_opens(tmp_path: Path) -> None:
    csv = tmp_path / "same.csv"
    csv.write_text("x,kind\n1,cat\n2,cat\n3,cat\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="'kind' of same.csv has 1 value"):
        host("mlp", str(csv), rounds=5, workers=1, out_dir=tmp_path / "run", port=0,
             bind="127.0.0.1", advertise=False, quiet=True)
    assert not (tmp_path / "run" / "session.json").exists()


def test_a_table_with_the_default_model_trains_the_builtin_mlp_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """`host --dataset t.csv` alone: the default simplenet takes images, so the session
    trains mlp (kept in session.json, so evaluate and --resume build the same); a model
    named on purpose is left to refuse the table."""
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))
    csv = write_table(tmp_path / "t.csv", 60)
    caplog.set_level("INFO", logger="computeshare_desktop.hub.user_model")
    session = HubSession(HubConfig(dataset=str(csv), workers=1, rounds=1, eval_every=0),
                         pin="246810", hub_key="k" * 40, out_dir=tmp_path / "out")
    try:
        assert session.config.model == "mlp"
        saved = json.loads((tmp_path / "out" / "session.json").read_text(encoding="utf-8"))
        assert saved["config"]["model"] == "mlp"
    finally:
        session.close()
    assert "t is a table: the session trains the built-in mlp (simplenet takes images)" \
        in caplog.text
    with pytest.raises(ConfigError, match="resnet18 takes images"):
        HubSession(HubConfig(dataset=str(csv), model="resnet18", workers=1, rounds=1),
                   pin="246810", hub_key="k" * 40, out_dir=tmp_path / "out2")
