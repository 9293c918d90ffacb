"""--tensorboard: a session writes TensorBoard event files beside metrics.jsonl, and
TensorBoard's own reader finds in them what metrics.jsonl says, round by round; a resumed
session appends without repeating a step.

The session runs in this process with fake workers (helpers.hub), rounds in milliseconds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator)

from computeshare_desktop.events import DiskError  # noqa: E402
from computeshare_desktop.hub import HubConfig, HubSession  # noqa: E402
from computeshare_desktop.hub import session as session_module  # noqa: E402
from computeshare_desktop.hub.outputs import METRICS_FILE  # noqa: E402
from computeshare_desktop.hub.tensorboard_log import TENSORBOARD_DIR  # noqa: E402
from helpers.hub import HUB_KEY, PIN, T0, grads, start_training  # noqa: E402

CONFIG = dict(workers=2, rounds=8, batch_size=8, eval_every=3, checkpoint_every=2,
              momentum=0.0, schedule="cosine", warmup=2)
SAMPLES = (2, 6)  # each round: the two workers' samples, so their shares are 1/4 and 3/4


class Driven:
    """A HubSession as helpers.hub's fake workers drive a HubCore: requests go through the
    session (so its records are written), everything else is the core's."""

    def __init__(self, session: HubSession) -> None:
        self.session = session

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session.core, name)

    def handle(self, *args: Any) -> Any:
        return self.session.handle(*args)

    def handle_pairing(self, *args: Any) -> Any:
        return self.session.handle_pairing(*args)


@pytest.fixture(autouse=True)
def no_export(monkeypatch: pytest.MonkeyPatch) -> None:
    """The end skips trained_model.pt2 (seconds of torch.export, not what is tested here)."""
    def refuse(*args: Any) -> bytes:
        raise RuntimeError("not exported in this test")
    monkeypatch.setattr(session_module, "export_program", refuse)


def run(out: Path, rounds: int, *, resume: bool = False, loss: float = 1.0,
        finish: bool = False) -> HubSession:
    """A session in ``out`` with --tensorboard that trains ``rounds`` rounds; closed (as
    after a stop) or finished."""
    session = HubSession(HubConfig(**CONFIG), pin=PIN, hub_key=HUB_KEY, out_dir=out,
                         resume=resume, tensorboard=True)
    hub = Driven(session)
    workers = start_training(hub, T0)  # type: ignore[arg-type]
    for r in range(rounds):
        now = T0 + 1 + r
        for w, g, samples in zip(workers, grads(hub, 2, seed=r), SAMPLES, strict=True):
            w.push(hub, now, g, samples=samples, loss=loss / (session.version + 1))  # type: ignore[arg-type]
    if finish:
        session.finish()
    session.close()
    return session


def metrics(out: Path) -> list[dict[str, Any]]:
    text = (out / METRICS_FILE).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def board(out: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the event files, as TensorBoard reads them: tag -> (step, value)."""
    reader = EventAccumulator(str(out / TENSORBOARD_DIR), size_guidance={"scalars": 0})
    reader.Reload()
    return {tag: [(e.step, e.value) for e in reader.Scalars(tag)]
            for tag in reader.Tags()["scalars"]}


def expected(records: list[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """What the curves must be, from metrics.jsonl alone."""
    rounds = [r for r in records if r["type"] == "round"]
    evals = [r for r in records if r["type"] == "eval"]

    def curve(rows: list[dict[str, Any]], value: Any) -> list[tuple[int, float]]:
        return [(r["version"], value(r)) for r in rows]

    want = {
        "train/loss": curve(rounds, lambda r: r["loss"]),
        "train/learning_rate": curve(rounds, lambda r: r["lr"]),
        "speed/samples_per_s": curve(rounds, lambda r: r["samples"] / r["seconds"]),
        "traffic/bytes": curve(rounds, lambda r: r["bytes_in"] + r["bytes_out"]),
        "workers/contributors": curve(rounds, lambda r: r["contributors"]),
        "test/accuracy": curve(evals, lambda r: r["accuracy"]),
        "test/loss": curve(evals, lambda r: r["test_loss"]),
    }
    for name in ("bytes_in", "bytes_out", "data_bytes", "model_bytes", "update_bytes"):
        want[f"traffic/{name}"] = curve(rounds, lambda r, n=name: r[n])  # type: ignore[misc]
    for name, share in zip(("w1", "w2"), (0.25, 0.75), strict=True):
        want[f"compute_share/{name}"] = curve(rounds, lambda r, s=share: s)  # type: ignore[misc]
    return want


def assert_same(got: dict[str, list[tuple[int, float]]],
                want: dict[str, list[tuple[int, float]]]) -> None:
    assert sorted(got) == sorted(want)
    for tag, points in want.items():
        assert [s for s, _ in got[tag]] == [s for s, _ in points], tag
        assert [v for _, v in got[tag]] == pytest.approx([v for _, v in points],
                                                         rel=1e-6), tag


def test_the_event_files_hold_what_metrics_jsonl_says(tmp_path: Path) -> None:
    run(tmp_path, 8, finish=True)
    records = metrics(tmp_path)
    assert [r["version"] for r in records if r["type"] == "eval"] == [3, 6, 8]
    lrs = [r["lr"] for r in records if r["type"] == "round"]
    assert lrs[0] < lrs[1] > lrs[-1] > 0  # the warm-up, then the cosine: the rate moves
    assert_same(board(tmp_path), expected(records))


def test_a_resumed_session_appends_and_no_step_repeats(tmp_path: Path) -> None:
    run(tmp_path, 5, loss=8.0)  # stopped at version 5; the checkpoint holds version 4
    run(tmp_path, 4, resume=True, finish=True)  # versions 5 to 8 again, other losses
    got = board(tmp_path)
    assert [s for s, _ in got["train/loss"]] == list(range(1, 9))
    assert got["train/loss"][4][1] == pytest.approx(1.0 / 5)  # the resumed run's version 5
    assert len(list((tmp_path / TENSORBOARD_DIR).iterdir())) == 2  # one file per run
    assert_same(got, expected(metrics(tmp_path)))


def test_a_folder_the_event_files_cannot_go_in_costs_no_training(tmp_path: Path) -> None:
    (tmp_path / TENSORBOARD_DIR).write_bytes(b"")  # a file where the folder would be
    events: list[Any] = []
    session = HubSession(HubConfig(**CONFIG), pin=PIN, hub_key=HUB_KEY, out_dir=tmp_path,
                         on_event=events.append, tensorboard=True)
    hub = Driven(session)
    workers = start_training(hub, T0)  # type: ignore[arg-type]
    for w, g in zip(workers, grads(hub, 2), strict=True):
        w.push(hub, T0 + 1, g)  # type: ignore[arg-type]
    session.close()
    assert session.version == 1 and session.board is None
    assert [e.what for e in events if isinstance(e, DiskError)] == ["TensorBoard logs"]
    assert [r["version"] for r in metrics(tmp_path) if r["type"] == "round"] == [1]
