"""The Python API (``from computeshare_desktop import host``): a user's own module and an
in-memory map-style dataset train on loopback with this machine's worker and one that
pairs with the PIN, as ``computeshare join`` would; stops save; bad input is said at once."""

from __future__ import annotations

import copy
import os

import pytest
import torch

from helpers.host import joining
from computeshare_desktop import host
from computeshare_desktop.errors import ConfigError
from computeshare_desktop.events import Ended, Evaluated, Event, Finished, Joined, RoundClosed
from computeshare_desktop.service import JoinService, JoinTarget, Tagged
from computeshare_desktop.worker import pick_device
from helpers.nets import Stripes, TinyNet


LOOPBACK = dict(port=0, bind="127.0.0.1", advertise=False, quiet=True, preset="lan",
                batch_size=16, lr=0.05)


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("COMPUTESHARE_PIN", raising=False)


def join(address: str, pin: str, heard: list[Tagged]) -> JoinService:
    """Another worker, paired with the PIN, as ``computeshare join ADDRESS`` would."""
    host_, port = address.rsplit(":", 1)
    plan = joining(JoinTarget(host_, int(port), address), pin=pin, name="api-test-worker",
                    device=pick_device("cpu"), follow_hub=False)
    return JoinService(plan, on_event=heard.append).start()


@pytest.mark.slow  # ~8 s: the hub lingers after its last round for its workers to hear it
def test_a_users_module_and_dataset_train_across_two_workers(tmp_path) -> None:
    given = TinyNet()
    before = copy.deepcopy(given.state_dict())
    run = host(given, train=Stripes(240, 0), test=Stripes(90, 1), rounds=30, workers=2,
               this_machine_trains=True, eval_every=15, out_dir=tmp_path / "run", **LOOPBACK)
    heard: list[Tagged] = []
    worker = join(run.address, run.pin, heard)
    try:
        result = run.wait(120)
    finally:
        assert worker.join(30)
    assert type(result.model) is TinyNet and result.model is not given
    assert all(torch.equal(before[k], v) for k, v in given.state_dict().items())  # untouched
    saved = torch.load(result.out_dir / "trained_model.pth", weights_only=True)
    fresh = TinyNet()
    fresh.load_state_dict(saved)  # the user's own class loads the file
    assert all(torch.equal(saved[k], v) for k, v in result.model.state_dict().items())
    assert not torch.equal(saved["head.weight"], before["head.weight"])
    assert saved["norm.num_batches_tracked"].item() == 30  # global steps, counted by the hub
    assert not result.stopped and result.metrics.rounds == 30
    assert result.metrics.accuracy is not None and result.metrics.accuracy > 0.9
    assert [e.version for e in result.metrics.history] == [15, 30]
    assert len(result.metrics.train_loss) == 30
    assert result.metrics.train_loss[-1] < result.metrics.train_loss[0]
    joined = [t.event for t in heard if isinstance(t.event, Joined)]  # the data's shape came
    assert joined and joined[0].dataset == "python:Stripes"  # in the Welcome: no registry
    assert worker.result is not None and worker.result.pushed > 0
    events = list(run.events())
    assert all(isinstance(e, Event) for e in events)
    assert sum(isinstance(e, RoundClosed) for e in events) == 30
    finished = next(i for i, e in enumerate(events) if isinstance(e, Finished))
    assert isinstance(events[finished - 1], Evaluated) and isinstance(events[-1], Ended)
    assert list(run.events()) == []  # each event is given once; the feed has ended
    assert {"trained_model.pt2", "classes.json", "checkpoint.pt"} <= set(os.listdir(result.out_dir))


def test_stop_mid_run_saves_the_model_as_every_stop_does(tmp_path) -> None:
    with host(TinyNet(), train=Stripes(120, 2), rounds=100_000, workers=1,
              this_machine_trains=True, out_dir=tmp_path / "run", **LOOPBACK) as run:
        for event in run.events():
            if isinstance(event, RoundClosed) and event.round >= 3:
                break
        result = run.stop()
    assert result.stopped and 3 <= result.metrics.rounds < 100_000
    saved = torch.load(result.out_dir / "trained_model.pth", weights_only=True)
    TinyNet().load_state_dict(saved)
    assert (result.out_dir / "checkpoint.pt").is_file()
    assert not run.running


def test_an_unknown_option_is_a_type_error_naming_it(tmp_path) -> None:
    with pytest.raises(TypeError, match="'learning_rate'"):
        host(TinyNet(), train=Stripes(20, 0), learning_rate=0.1, out_dir=tmp_path / "r")
    with pytest.raises(ConfigError, match="rounds must be at least 1"):
        host(TinyNet(), train=Stripes(20, 0), rounds=0, out_dir=tmp_path / "r", **LOOPBACK)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        host(object(), train=Stripes(20, 0), out_dir=tmp_path / "r")  # type: ignore[arg-type]
    assert not (tmp_path / "r").exists()


class Ragged(Stripes):
    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        image, label = super().__getitem__(i)
        return (image[:, :10] if i == 7 else image), label


def test_a_dataset_with_images_of_another_shape_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="train item 7's image is 1×10×12, item 0's 1×12×12"):
        host(TinyNet(), train=Ragged(20, 0), out_dir=tmp_path / "r", **LOOPBACK)
    with pytest.raises(ConfigError, match="test images are 1×10×12, the training"):
        host(TinyNet(), train=Stripes(20, 0), test=[(torch.zeros(1, 10, 12), 0)],
             out_dir=tmp_path / "r", **LOOPBACK)


class Branchy(TinyNet):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # data-dependent control flow: torch.export cannot trace it
            return super().forward(x)
        return -super().forward(x)


def test_a_module_that_does_not_export_is_refused_before_the_session_opens(tmp_path) -> None:
    with pytest.raises(ConfigError, match="export"):
        host(Branchy(), train=Stripes(20, 0), out_dir=tmp_path / "r", **LOOPBACK)
