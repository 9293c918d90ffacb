"""What a session leaves for people: trained_model.pth (a state_dict), trained_model.pt2 (an
eval program with the normalization inside, for torch.export.load alone) and classes.json,
at the end of a session and at every stop that saves; an export that fails loses nothing."""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import subprocess
import sys

import pytest
import torch
from torch import nn

from computeshare_desktop.data import dataset_info, load_dataset, normalize
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.evaluation import evaluate_file
from computeshare_desktop.events import DiskError, Finished, LogLine, Stopped
from computeshare_desktop.hub import HubConfig, HubSession
from computeshare_desktop.hub.exports import export_program
from computeshare_desktop.hub.outputs import (CLASSES_FILE, MODEL_FILE, PROGRAM_FILE,
                                              OutputDir)
from computeshare_desktop.models import build_model
from helpers.net import train_session

ROUNDS = 40
# A Python that never imported this package scores the program on the test images.
CHILD = """
import sys, torch
program = torch.export.load(sys.argv[1])
images, labels = torch.load(sys.argv[2], weights_only=True)
logits = program.module()(images)
accuracy = (logits.argmax(dim=1) == labels).float().mean().item()
torch.save({"logits": logits.detach(), "accuracy": accuracy}, sys.argv[3])
assert not [m for m in sys.modules if m.startswith("computeshare")], "imported the package"
"""


def in_a_fresh_python(cwd, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-c", CHILD, *args], cwd=cwd, env=env, check=True,
                   timeout=180)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A short real session on loopback (one worker), over: the hub and its folder."""
    out = tmp_path_factory.mktemp("finished")
    hub, _ = train_session(out, workers=1, rounds=ROUNDS, batch_size=32, eval_every=0)
    return hub, out


def stopped(out, disk: type[OutputDir] = OutputDir) -> tuple[HubSession, list, object]:
    """A session (not started) that stops and saves: it, its events, the .pth's path."""
    events: list = []
    hub = HubSession(HubConfig(workers=1, rounds=100, batch_size=8, eval_every=0),
                     pin="246810", hub_key="k" * 40, out_dir=out, on_event=events.append)
    hub.out = disk(out)
    try:
        return hub, events, hub.save_stopped()
    finally:
        hub.close()


def test_a_finished_session_leaves_the_three_files(finished):
    hub, out = finished
    assert sorted(p.name for p in out.glob("trained_model.*")) == [PROGRAM_FILE, MODEL_FILE]
    assert json.loads((out / CLASSES_FILE).read_text(encoding="utf-8")) == list("0123456789")
    (done,) = hub.of_kind(Finished)
    assert done.model_path == str(out / MODEL_FILE)
    # the .pth loads into a fresh model of the class, with weights_only
    model = build_model("simplenet", dataset_info("mnist-sample"))
    model.load_state_dict(torch.load(out / MODEL_FILE, weights_only=True))
    for name, tensor in hub.session.server.model.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name


def test_the_program_in_a_fresh_python_scores_as_the_hub(finished, tmp_path):
    hub, out = finished
    test = load_dataset("mnist-sample", "test")
    torch.save((test.images.float() / 255, test.labels), tmp_path / "test.pt")
    in_a_fresh_python(tmp_path, str(out / PROGRAM_FILE), "test.pt", "scores.pt")
    child = torch.load(tmp_path / "scores.pt", weights_only=True)
    model = hub.session.server.model.eval()
    try:
        with torch.no_grad():
            expected = model(normalize(test.images, test.info))
    finally:
        model.train()
    assert torch.allclose(child["logits"], expected, atol=1e-4)
    assert child["accuracy"] == pytest.approx(hub.result.accuracy, abs=0.01)
    assert hub.result.accuracy > 0.5  # trained: the comparison means something


def test_evaluate_agrees_on_both_files(finished):
    hub, out = finished
    by_weights = evaluate_file(out / MODEL_FILE, "simplenet", "mnist-sample")
    by_program = evaluate_file(out / PROGRAM_FILE, "simplenet", "mnist-sample")
    assert by_weights.accuracy == pytest.approx(hub.result.accuracy, abs=1e-9)
    assert by_program.accuracy == pytest.approx(by_weights.accuracy, abs=0.01)
    assert by_program.loss == pytest.approx(by_weights.loss, rel=1e-3)
    assert by_program.samples == by_weights.samples == 1000


def test_a_stop_saves_the_program_and_the_classes(tmp_path):
    hub, events, path = stopped(tmp_path)
    assert path == tmp_path / MODEL_FILE and (tmp_path / "checkpoint.pt").is_file()
    assert json.loads((tmp_path / CLASSES_FILE).read_text(encoding="utf-8")) == list("0123456789")
    program = torch.export.load(tmp_path / PROGRAM_FILE)
    x = torch.rand(3, 1, 28, 28)
    model = hub.server.model.eval()
    expected = model((x - 0.1315) / 0.3088)
    assert torch.allclose(program.module()(x), expected, atol=1e-5)
    assert isinstance(events[-1], Stopped)


def test_an_export_that_fails_loses_nothing(tmp_path, monkeypatch, caplog):
    def refuse(model, info):
        raise ConfigError("the model does not export: data-dependent control flow")

    monkeypatch.setattr("computeshare_desktop.hub.session.export_program", refuse)
    caplog.set_level(logging.WARNING, logger="computeshare_desktop.hub.session")
    _, events, path = stopped(tmp_path)
    assert path is not None and torch.load(path, weights_only=True)
    assert (tmp_path / "checkpoint.pt").is_file() and (tmp_path / CLASSES_FILE).is_file()
    assert not (tmp_path / PROGRAM_FILE).exists()
    (line,) = [e for e in events if isinstance(e, LogLine)]
    assert "Could not export trained_model.pt2" in line.text and "control flow" in line.text
    assert "trained_model.pth is saved" in line.text and isinstance(events[-1], Stopped)
    assert any("could not export" in r.getMessage() for r in caplog.records)


class NoProgramDisk(OutputDir):
    def save_program(self, archive):
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_disk_error_on_the_program_is_reported(tmp_path):
    _, events, path = stopped(tmp_path, NoProgramDisk)
    assert path == tmp_path / MODEL_FILE
    (error,) = [e for e in events if isinstance(e, DiskError)]
    assert PROGRAM_FILE in error.what and "No space" in error.error
    assert (tmp_path / MODEL_FILE).is_file() and not (tmp_path / PROGRAM_FILE).exists()


def test_a_model_with_data_dependent_control_flow_is_a_clear_export_error():
    class Branchy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(784, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.sum() > 0:
                return self.fc(x.flatten(1))
            return -self.fc(x.flatten(1))

    with pytest.raises(ConfigError):
        export_program(Branchy(), dataset_info("mnist-sample"))


def test_a_programs_module_exports_in_eval_mode():
    """The hub's model may be a program's module (--model PATH.pt2): its mode is fixed in
    train mode, so dropout and batch norm are switched in its graph before the export."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.BatchNorm1d(32), nn.Dropout(0.5),
                        nn.Linear(32, 10))
    net(torch.randn(16, 1, 28, 28))  # running statistics away from their start
    program = torch.export.export(net, (torch.randn(2, 1, 28, 28),),
                                  dynamic_shapes=({0: torch.export.Dim("batch", min=2)},))
    module = program.module()
    before = {k: v.clone() for k, v in module.state_dict().items()}
    info = dataset_info("mnist-sample")
    archive = export_program(module, info)
    x = torch.rand(5, 1, 28, 28)
    logits = torch.export.load(io.BytesIO(archive)).module()(x)
    assert torch.allclose(logits, net.eval()((x - 0.1315) / 0.3088), atol=1e-5)
    assert all(torch.equal(before[k], v) for k, v in module.state_dict().items())
    module(torch.randn(4, 1, 28, 28))  # the hub's module still trains as it did
