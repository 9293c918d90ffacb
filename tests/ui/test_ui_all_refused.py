"""The hub's window when workers refuse its model, over real sockets on loopback: each
refusal is a banner naming the worker, the layer and why; the refused worker's row says so in
words; once every worker that came refused it, a red banner says so within 2 s of the last
refusal, and the window waits on (the app does not end the session: Stop does).

The workers are real WorkerSessions; the hub's graph is edited after its own check, so that
its first convolution calls an op off the workers' allow-list, as workers with another
release's allow-list would refuse it. Its screenshot goes to COMPUTESHARE_SCREENSHOTS (or the
test's folder)."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

import msgspec  # noqa: E402

from computeshare_desktop.hub.user_model import ShippedGraph  # noqa: E402
from computeshare_desktop.protocol.graphs import (decode_manifest, encode_manifest,  # noqa: E402
                                                  program_sha256)
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.graph import model_file  # noqa: E402
from helpers.net import WorkerThread, free_ports  # noqa: E402

REPORT_S = 2.0  # the host reports it within 2 s of the last refusal
LAYER = "layer stem.0: nn.Conv2d: "  # the first convolution of helpers.graph's network


def forbidding(graph: ShippedGraph) -> ShippedGraph:
    """``graph`` with its first convolution calling an op off the allow-list, its manifest
    updated to match."""
    tree = json.loads(graph.part("program"))
    node = next(n for n in tree["graph_module"]["graph"]["nodes"]
                if n["target"] == "torch.ops.aten.convolution.default")
    node["target"] = "torch.ops.aten._foobar.default"
    program = json.dumps(tree).encode()
    manifest = msgspec.structs.replace(decode_manifest(graph.part("manifest")),
                                       program_bytes=len(program),
                                       program_sha256=program_sha256(program))
    return ShippedGraph(manifest, {"manifest": encode_manifest(manifest), "program": program,
                                   "state": graph.part("state")})


def refused_at(caplog: pytest.LogCaptureFixture, name: str) -> float:
    """When the worker ``name``'s core refused the model (its log line's time)."""
    for record in caplog.records:
        if record.name.endswith("worker.core") and "refusing the hub's model" in \
                record.getMessage() and record.threadName.endswith(name):
            return record.created
    raise AssertionError(f"{name} did not refuse")


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("COMPUTESHARE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_each_refusal_is_a_banner_and_everyone_refusing_a_red_one(qtbot, main_window,
                                                                   tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    window = main_window.host(HostOptions(
        model=model_file(tmp_path), workers=2, rounds=5, batch_size=8, train_here=False,
        out_dir=str(tmp_path / "run"), port=free_ports(), eval_every=0))
    assert window is not None
    qtbot.waitUntil(lambda: window.runner.session is not None
                    and window.state.port is not None, timeout=60_000)
    core = window.runner.session.core
    core.graph = forbidding(core.graph)
    workers = [WorkerThread(window.state.port, "w1", pin=window.runner.pin)]
    try:
        workers[0].thread.join(60)
        qtbot.waitUntil(lambda: "w1" in window.banner.text() and window.banner.isVisible(),
                        timeout=5_000)
        text = window.banner.text()  # nobody else came yet: the one that came refused
        assert window.banner.property("level") == "error"
        assert text.startswith("No worker can train this model: the one worker that came "
                               f"refused it. The last, w1: {LAYER}")
        assert "_foobar" in text and "“Offer the model's code" in text  # its check box
        assert "--" not in text  # no flag: the app's words (words.refusal_for_app)
        qtbot.waitUntil(lambda: window.workers_table.rowCount() == 1, timeout=5_000)
        state = window.workers_table.item(0, window.workers_table.columnCount() - 1).text()
        assert state == "Refused the model"  # words (gui/words.py), not the event's model_refused
        workers.append(WorkerThread(window.state.port, "w2", pin=window.runner.pin))
        workers[1].thread.join(60)
        qtbot.waitUntil(lambda: "all 2 workers" in window.banner.text(), timeout=5_000)
        shown = time.time()
        print(f"the red banner showed {shown - refused_at(caplog, 'w2'):.3f} s after w2 "
              "refused")
        assert shown - refused_at(caplog, "w2") < REPORT_S
        assert window.banner.text().startswith(
            f"No worker can train this model: all 2 workers that came refused it. The last, "
            f"w2: {LAYER}")
        assert "waits for another worker" in window.banner.text()
        assert window.chip.text() == "Waiting" and window.state.phase == "waiting"
        assert window.cards["workers"].value.text() == "0 of 2"  # how many it waits for
        assert window.runner.running  # the app's window waits on: Stop ends it
        qtbot.waitUntil(lambda: window.workers_table.rowCount() == 2, timeout=5_000)
        window.grab().save(str(shots(tmp_path) / "progress-hub-refused.png"))
    finally:
        for worker in workers:
            worker.close()


def test_a_refusal_while_others_train_is_an_amber_banner_that_a_join_clears() -> None:
    """The window's state alone (no Qt): a worker's refusal while another is still there is
    a warning naming it; a machine joining afterwards clears it, and leaves another banner."""
    from computeshare_desktop.events import (DiskError, ModelRefused, WorkerInfo,
                                             WorkerJoined, WorkerLeft)
    from computeshare_desktop.gui.progress_state import ProgressState
    from computeshare_desktop.service import Tagged

    state = ProgressState("hub", total_rounds=5, expected_workers=2)
    one, two = WorkerInfo(1, "vm", "CPU", 0), WorkerInfo(2, "pc", "CPU", 1)
    state.apply([Tagged("hub", WorkerJoined(one)), Tagged("hub", WorkerJoined(two)),
                 Tagged("hub", WorkerLeft(two, "model_refused")),
                 Tagged("hub", ModelRefused("pc", "layer rnn: nn.LSTM: too big; fix it"))])
    assert state.banner == ("warning", "Worker pc cannot train this model: layer rnn: "
                            "nn.LSTM: too big; fix it")
    assert state.workers[2].state == "model_refused"
    assert "model_refused" not in " ".join(state.take_log())
    state.apply([Tagged("hub", WorkerJoined(WorkerInfo(3, "mac", "MPS", 1)))])
    assert state.banner is None
    state.apply([Tagged("hub", ModelRefused("pc", "again")),
                 Tagged("hub", DiskError("metrics", "disk full")),
                 Tagged("hub", WorkerJoined(WorkerInfo(4, "nas", "CPU", 1)))])
    assert state.banner is not None and "disk full" in state.banner[1]
