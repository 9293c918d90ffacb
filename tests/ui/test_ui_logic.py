"""The Qt-free half of the desktop app: view model, settings, options and text. These need no
display and no PySide6, so they run wherever the core suite runs."""

from __future__ import annotations

import json

import pytest

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.gui.formatting import (ago, group_pin, human_bytes, human_duration,
                                                 refusal_message)
from computeshare_desktop.gui.options import HostOptions, JoinTarget
from computeshare_desktop.gui.progress_state import ProgressState
from computeshare_desktop.gui.settings import SETTINGS_VERSION, Settings, settings_path


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def worker_summary(wid: int, pushed: int, ready: bool = True) -> dict:
    return {"id": wid, "name": f"w{wid}", "device": "CPU, 8 cores", "shard": wid - 1,
            "pushed": pushed, "rejected": 0, "samples": 32 * pushed, "ready": ready,
            "compute_s": 0.1}


def hub_round(version: int, workers: list[dict]) -> dict:
    return {"source": "hub", "kind": "round", "round": version, "version": version,
            "loss": 2.0 / version, "contributors": len(workers), "rejected": 0,
            "bytes_in": 1000, "bytes_out": 2000, "seconds": 0.1, "compute_s": 0.05,
            "complete": True, "workers": workers}


def test_hub_state_follows_a_session_from_listening_to_finished():
    clock = Clock()
    state = ProgressState("hub", total_rounds=100, clock=clock, expected_workers=2)
    state.apply([{"source": "hub", "kind": "listening", "port": 7341, "pub_port": 7342,
                  "pair_port": 7343, "bind": "0.0.0.0", "hub_key": "ab" * 8,
                  "out_dir": "/out", "addresses": ["10.0.0.2"]},
                 {"source": "hub", "kind": "worker_joined", "worker": worker_summary(1, 0)},
                 {"source": "hub", "kind": "worker_joined", "worker": worker_summary(2, 0)},
                 {"source": "hub", "kind": "state", "state": "training"}])
    assert state.phase == "training" and state.active_workers() == 2
    for version in range(1, 11):
        clock.now += 0.5
        state.apply([hub_round(version, [worker_summary(1, version),
                                         worker_summary(2, version)])])
        state.tick()
    assert state.version == 10 and state.bytes_received == 10_000 and state.bytes_sent == 20_000
    assert state.eta_s() == pytest.approx(90 * 0.5)  # 2 rounds per second, 90 to go
    assert state.workers[1].rate(clock.now) == pytest.approx(64.0)  # 32 samples per 0.5 s
    assert state.bandwidth() == pytest.approx(6000.0)  # 3000 bytes per 0.5 s
    assert len(state.loss) == len(state.loss_smooth) == 10
    state.apply([{"source": "hub", "kind": "rejected", "code": "STALE", "detail": ""}] * 3
                + [{"source": "hub", "kind": "eval", "version": 10, "accuracy": 0.5,
                    "loss": 1.0, "final": False},
                   {"source": "hub", "kind": "worker_left", "worker": worker_summary(2, 10),
                    "reason": "silent"}])
    assert state.latest_accuracy() == 0.5 and state.workers[2].state == "stopped answering"
    state.apply([{"source": "hub", "kind": "finished", "accuracy": 0.9712, "loss": 0.1,
                  "version": 100, "model_path": "/out/trained_model.pth", "seconds": 12.0},
                 {"source": "hub", "kind": "closed"}])
    assert state.phase == "finished" and state.final.accuracy == 0.9712 and state.closed
    log = "\n".join(state.take_log())
    assert "Refused requests: 3 × STALE" in log and "97.12%" in log
    assert "Worker 2 (w2) stopped answering" in log and state.take_log() == []


def test_worker_state_counts_its_pushes_and_tells_leaving_from_finishing():
    state = ProgressState("worker", name="laptop", clock=Clock())
    state.apply([{"source": "worker", "kind": "device", "description": "Apple MPS",
                  "note": ""},
                 {"source": "worker", "kind": "joined", "worker_id": 3, "shard": 0,
                  "num_shards": 2, "dataset": "mnist-sample", "model": "simplenet",
                  "rounds": 50, "device": "Apple MPS", "batch_size": 32}])
    state.apply([{"source": "worker", "kind": "round", "version": v, "loss": 1.0,
                  "compute_s": 0.02, "accepted": True, "pushed": v + 1, "rejected": 0}
                 for v in range(5)])
    assert (state.total_rounds, state.version) == (50, 5)
    row = state.workers[3]
    assert row.name == "laptop (this machine)" and row.samples == 160
    assert state.compute_ms[-1] == (5, pytest.approx(20.0))
    left = ProgressState("worker", clock=Clock())
    left.apply([{"source": "worker", "kind": "done", "pushed": 7, "rejected": 0,
                 "version": 6, "left": True},
                {"source": "worker", "kind": "stopped", "left": True, "result": True}])
    assert left.phase == "stopped" and left.final is None
    state.apply([{"source": "worker", "kind": "done", "pushed": 5, "rejected": 0,
                  "version": 4, "left": False}])
    assert state.phase == "finished" and state.final.pushed == 5


def test_worker_state_folds_the_hubs_feed_accuracy_all_workers_and_final_accuracy():
    state = ProgressState("worker", name="w3", clock=Clock())
    state.apply([{"source": "worker", "kind": "joined", "worker_id": 3, "shard": 0,
                  "num_shards": 2, "dataset": "mnist-sample", "model": "simplenet",
                  "rounds": 50, "device": "CPU", "batch_size": 32},
                 {"source": "feed", "kind": "worker_joined", "worker": worker_summary(4, 0)}])
    assert sorted(state.workers) == [3, 4]
    feed = [{**hub_round(v, [worker_summary(3, v), worker_summary(4, v)]), "source": "feed"}
            for v in range(1, 6)]
    state.apply(feed + [{"source": "worker", "kind": "round", "version": 4, "loss": 1.0,
                         "compute_s": 0.02, "accepted": True, "pushed": 5, "rejected": 1},
                        {"source": "feed", "kind": "eval", "version": 5, "accuracy": 0.5,
                         "loss": 1.0, "final": False}])
    assert state.workers[3].name == "w3 (this machine)" and state.workers[4].name == "w4"
    assert state.workers[4].pushed == 5 and state.accuracy == [(5, 0.5)]
    assert (state.pushed, state.rejected, state.version) == (5, 1, 5)
    assert state.bytes_sent == 0  # traffic is this machine's own, polled from its channel
    state.apply([{"source": "worker", "kind": "done", "pushed": 5, "rejected": 1,
                  "version": 49, "left": False}])  # the hub's Done before its "finished"
    assert state.final.accuracy is None and state.final.pushed == 5
    state.apply([{"source": "feed", "kind": "eval", "version": 50, "accuracy": 0.8,
                  "loss": 0.5, "final": True},
                 {"source": "feed", "kind": "finished", "accuracy": 0.8, "loss": 0.5,
                  "version": 50, "model_path": "/hub/model.pt", "seconds": 9.0}])
    assert state.final.accuracy == 0.8 and state.final.pushed == 5
    assert state.latest_accuracy() == 0.8 and state.workers[4].state == "done"


def test_settings_round_trip_and_bad_files(ui_home):
    settings = Settings()
    assert settings.path == settings_path() == ui_home / "settings.json"
    options = HostOptions(rounds=123, lr=0.05, workers=3, train_here=False,
                          out_dir=str(ui_home / "runs" / "run-1"))
    settings.remember_host(options)
    settings.remember_geometry("AAAA")
    settings.save()
    data = json.loads(settings.path.read_text())
    assert data["version"] == SETTINGS_VERSION and "pin" not in json.dumps(data).lower()
    again = Settings()
    loaded = again.host_options()
    assert (loaded.rounds, loaded.lr, loaded.workers, loaded.train_here) == (123, 0.05, 3, False)
    assert again.output_parent() == str(ui_home / "runs") and again.geometry() == "AAAA"
    settings.path.write_text(json.dumps({"version": 99, "host": {"rounds": 5}}))
    assert Settings().host_options() == HostOptions()  # a newer format: defaults
    settings.path.write_text("{not json")
    assert Settings().host_options() == HostOptions()
    settings.path.write_text(json.dumps({"version": 1, "host": {"rounds": "many", "lr": 1}}))
    assert Settings().host_options() == HostOptions(lr=1.0)


def test_options_parse_addresses_and_refuse_used_folders(tmp_path):
    target = JoinTarget.from_address(" tcp://10.0.0.5:7400 ")
    assert (target.host, target.port, target.pair_port) == ("10.0.0.5", 7400, None)
    assert JoinTarget.from_address("desk").port == 7341
    for bad in ("", ":7341", "host:port", "host:70000", "two words:1"):
        with pytest.raises(ConfigError):
            JoinTarget.from_address(bad)
    (tmp_path / "session.json").write_text("{}")
    with pytest.raises(ConfigError, match="already holds"):
        HostOptions(out_dir=str(tmp_path)).output_path()
    with pytest.raises(ConfigError):
        HostOptions(rounds=0, out_dir=str(tmp_path / "new")).config()


def test_text_for_people():
    assert group_pin("428913") == "428 913" and group_pin("1234") == "1234"
    assert group_pin("12345678") == "12 345 678"
    assert human_bytes(999) == "999 B" and human_bytes(1_500_000) == "1.5 MB"
    assert human_duration(75) == "1 min 15 s" and human_duration(None) == "—"
    assert human_duration(3 * 3600 + 120) == "3 h 02 min"
    assert ago(0.5) == "now" and ago(30) == "30 s ago"
    message = refusal_message("BAD_PIN", "wrong PIN")
    assert message.startswith("Wrong PIN") and message.endswith("(BAD_PIN)")
    assert "(SESSION_DONE)" in refusal_message("SESSION_DONE")
    assert refusal_message("BAD_SHAPE", "x").endswith("(BAD_SHAPE)")
    assert refusal_message("WHATEVER", "odd").endswith("(WHATEVER)")
