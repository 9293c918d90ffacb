"""A session resumed after its model file was edited: a clear error naming the first keys
that no longer fit, exit code 2, and the session's folder left exactly as it was (it can
still be resumed once the file is put back)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
from helpers.cli import run_cli
from helpers.graph import model_file
from helpers.net import PIN, RunningHub, WorkerThread, wait_for

from computeshare_desktop.data import dataset_info
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.hub.folder_lock import LOCK_FILE
from computeshare_desktop.hub.trainer import ParameterServer
from computeshare_desktop.models import build_model

MNIST = dataset_info("mnist")


def test_a_checkpoint_of_another_model_names_the_keys() -> None:
    config = HubConfig(model="mlp")
    server = ParameterServer.for_session(build_model("mlp", MNIST), config)
    other = ParameterServer.for_session(build_model("simplenet", MNIST), config).state()
    before = [p.clone() for p in server.params]
    with pytest.raises(ConfigError, match=r"^the checkpoint does not fit the session's model: "
                                          r"missing keys \(2\): fc3.weight, fc3.bias; unexpected "
                                          r"keys \(4\): conv1.weight, .* \(the model changed "
                                          r"since it was saved: put its file back as it was"):
        server.restore(other)
    assert all(torch.equal(a, b) for a, b in zip(before, server.params, strict=True))
    assert server.version == 0


def snapshot(folder: Path) -> dict[str, str]:
    """The session's files (the folder lock's own file, which says who runs there, aside)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()
            if p.name != LOCK_FILE}


@pytest.mark.slow
def test_resuming_after_the_model_file_was_edited_loses_nothing(tmp_path, monkeypatch,
                                                                capsys) -> None:
    out = tmp_path / "session"
    hub = RunningHub(out, workers=1, rounds=400, batch_size=8, eval_every=0,
                     checkpoint_every=5, model=model_file(tmp_path, width=4))
    worker = WorkerThread(hub.port, "w1")
    try:
        wait_for(lambda: (out / "checkpoint.pt").exists(), 60, "a checkpoint")
    finally:
        worker.close()
        hub.close()
    saved = snapshot(out)
    model_file(tmp_path, width=6)  # the person edits the file: every layer wider
    monkeypatch.setenv("COMPUTESHARE_PIN", PIN)
    code = run_cli(["host", "--resume", "--out", str(out), "--bind", "127.0.0.1", "--port", "0",
                 "--no-advertise", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "computeshare host: error: the checkpoint does not fit the session's model: " \
           "wrong shapes (" in err
    assert "stem.0.weight (4, 1, 3, 3) in the file, (6, 1, 3, 3) in the model" in err
    assert "Traceback" not in err and "unexpected error" not in err
    assert snapshot(out) == saved
