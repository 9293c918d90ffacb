"""``host()`` from Python when every worker refuses the model: it says so at once (unless
quiet) and, once nobody else came for the grace period, ``run.wait()`` raises
AllRefusedError with the model and a checkpoint saved, as the command line exits 9. The
workers are real WorkerSessions on loopback that run another torch release than the hub's."""

from __future__ import annotations

import pytest
from helpers.net import WorkerThread
from helpers.nets import Stripes, TinyNet

from computeshare_desktop import host
from computeshare_desktop.errors import AllRefusedError, ExitCode, RejectedError
from computeshare_desktop.hub import core as hub_core
from computeshare_desktop.protocol import RejectCode
from computeshare_desktop.worker import core as worker_core

PIN = "864209"
GRACE = 2.0  # the session's grace period here (a minute in use)


@pytest.mark.slow
def test_wait_raises_once_every_worker_refused_and_nobody_else_came(tmp_path, monkeypatch,
                                                                    capsys) -> None:
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(hub_core, "REFUSED_GRACE_S", GRACE)
    monkeypatch.setattr(worker_core, "torch_release", lambda: "2.13.0")  # the workers' only
    run = host(TinyNet(), Stripes(64, seed=1), Stripes(32, seed=2), rounds=5, workers=2,
               port=0, bind="127.0.0.1", advertise=False, pin=PIN, out_dir=tmp_path / "out")
    try:
        port = int(run.address.rsplit(":", 1)[1])
        for name in ("old-1", "old-2"):
            worker = WorkerThread(port, name, pin=PIN)
            worker.thread.join(60)
            assert isinstance(worker.error, RejectedError), worker.error
            assert worker.error.code is RejectCode.TORCH_MISMATCH
        with pytest.raises(AllRefusedError) as info:
            run.wait(timeout=60)
    finally:
        if run.running:
            run.stop()
    assert info.value.exit_code is ExitCode.MODEL_REFUSED
    assert "refused the model" in str(info.value) and "install torch" in str(info.value)
    said = capsys.readouterr().out
    assert "No worker can train this model: all 2 workers that came refused it" in said, said
    assert "run.wait() raises AllRefusedError" in said
    assert (tmp_path / "out" / "checkpoint.pt").exists()
    assert (tmp_path / "out" / "trained_model.pth").exists()
