"""What the host is told about its own data at normal verbosity (LogLines the CLI prints
and the progress window shows), and a session refused before it opens when its training
split cannot give every worker a sample. Tiny folders the tests write; no worker joins."""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec
import pytest
from PIL import Image

from helpers.host import hosting
from computeshare_desktop.errors import ConfigError, RejectedError
from computeshare_desktop.events import Failed, Listening, LogLine
from computeshare_desktop.hub import HubConfig
from computeshare_desktop.protocol import MsgType
from computeshare_desktop.service import HostService, Tagged
from computeshare_desktop.service.prepare import prepare
from computeshare_desktop.worker.download import check_shard
from helpers.net import free_ports
from helpers.protocol import EXAMPLES


def write_folder(root: Path, counts: dict[str, int], sizes: tuple[int, ...] = (32,)) -> Path:
    """``counts[c]`` colour images in ``root/c``, their sides taking ``sizes`` in turn."""
    for i, (name, count) in enumerate(sorted(counts.items())):
        (root / name).mkdir(parents=True, exist_ok=True)
        for j in range(count):
            side = sizes[j % len(sizes)]
            Image.new("RGB", (side, side), (60 * i, 10 * j, 90)).save(root / name / f"{j}.png")
    return root


def run_host(tmp_path: Path, monkeypatch, **config) -> tuple[HostService, list[Tagged]]:
    """A host (no local worker) run until it listens or fails, then stopped."""
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))
    heard: list[Tagged] = []
    plan = hosting(HubConfig(rounds=2, batch_size=4, eval_every=0, **config),
                    tmp_path / "run", port=free_ports(), bind="127.0.0.1", advertise=False,
                    train_here=False, pin="975310", linger_s=0.1)
    service = HostService(plan, on_event=heard.append).start()
    for _ in range(600):
        if any(isinstance(t.event, (Listening, Failed)) for t in heard):
            break
        service.wait(0.05)
    service.stop()
    assert service.join(20)
    return service, heard


def lines(heard: list[Tagged]) -> list[str]:
    return [t.event.text for t in heard if isinstance(t.event, LogLine)]


def test_more_workers_than_training_samples_is_refused_before_the_session_opens(
        tmp_path, monkeypatch):
    data = write_folder(tmp_path / "few", {"a": 2, "b": 2})
    service, heard = run_host(tmp_path, monkeypatch, dataset=str(data), test_fraction=0.5,
                              workers=3)
    assert isinstance(service.error, ConfigError)
    assert "fewer than the 3 workers" in str(service.error)
    assert service.error.exit_code == 2
    assert not any(isinstance(t.event, Listening) for t in heard)


def test_a_worker_refuses_an_empty_shard_in_its_own_words():
    welcome = EXAMPLES[MsgType.WELCOME]
    empty = type(welcome)(**{**msgspec.structs.asdict(welcome), "shard_size": 0})
    with pytest.raises(RejectedError) as refused:
        check_shard(empty)
    text = str(refused.value)
    assert text.startswith("this worker refuses") and "hub refused" not in text
    assert "more workers than training samples" in text


def test_the_host_hears_its_data_choices_once_and_the_test_source_by_name(
        tmp_path, monkeypatch, caplog):
    data = write_folder(tmp_path / "pets", {"cat": 4, "dog": 4}, sizes=(32, 40))
    (data / "dog" / "notes.txt").write_text("not an image", encoding="utf-8")
    exam = write_folder(tmp_path / "exam", {"cat": 1, "dog": 1})
    with caplog.at_level(logging.WARNING):
        service, heard = run_host(tmp_path, monkeypatch, dataset=str(data),
                                  test_data=str(exam), workers=1)
    said = lines(heard)
    assert service.error is None, said
    assert "pets: 8 images at 224×224, 3 channels (224 when sizes differ; set the image size " \
           "to choose)" in said
    assert "Workers augment each training batch: crop,flip (augmentation none turns it off)" in said
    assert not any("--" in line for line in said), said  # the app shows these lines
    assert sum("not an image file" in line for line in said) == 1
    assert "not an image file" not in caplog.text  # the details are INFO, in the log file
    preparing = [line for line in said if line.startswith("Preparing")]
    assert any("the test images of exam" in line for line in preparing), preparing
    assert not any("pets: 2 of 2" in line for line in preparing), preparing


def test_a_table_says_which_columns_it_one_hot_encodes(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPUTESHARE_DATA_DIR", str(tmp_path / "cache"))
    rows = [f"{i},{['north', 'south', 'east'][i % 3]},{i % 2}" for i in range(30)]
    table = tmp_path / "sales.csv"
    table.write_text("size,region,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    report = prepare(str(table), cache_dir=tmp_path / "cache")
    assert report is not None
    assert "'region' is one-hot encoded as 3 features" in report.lines()
