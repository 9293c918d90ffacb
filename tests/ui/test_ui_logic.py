"""The Qt-free half of the desktop app: view model, settings, options and text. These need no
display and no PySide6, so they run wherever the core suite runs."""

from __future__ import annotations

import json

import msgspec
import pytest

from computeshare_desktop.errors import ConfigError
from computeshare_desktop.events import (DeviceChosen, Ended, Evaluated, Event, Finished, Joined,
                                         Listening, Pushed, Rejected, RoundClosed,
                                         StateChanged, WorkerDone, WorkerInfo, WorkerJoined,
                                         WorkerLeft, WorkerReady)
from computeshare_desktop.gui.formatting import ago, group_pin, human_bytes, human_duration
from computeshare_desktop.gui.progress_state import ProgressState
from computeshare_desktop.gui.settings import SETTINGS_VERSION, Settings, settings_path
from computeshare_desktop.service import FEED, Tagged
from computeshare_desktop.service.messages import refusal_message
from computeshare_desktop.service.options import HostOptions, JoinTarget
from helpers.clock import Clock


def worker_summary(wid: int, pushed: int, ready: bool = True) -> WorkerInfo:
    return WorkerInfo(wid, f"w{wid}", "CPU, 8 cores", wid - 1, pushed, 0, 32 * pushed, ready,
                      0.1)


def hub_round(version: int, workers: list[WorkerInfo], source: str = "hub") -> Tagged:
    return Tagged(source, RoundClosed(
        round=version, version=version, steps=1, loss=2.0 / version,
        contributors=len(workers), rejected=0, bytes_in=1000, bytes_out=2000,
        payload_bytes=3000, samples=32 * len(workers), seconds=0.1, complete=True,
        compute_s=0.05, busy=0.5, workers=tuple(workers)))


def hub(event: Event) -> Tagged:
    return Tagged("hub", event)


def worker(event: Event) -> Tagged:
    return Tagged("worker", event)


def feed(event: Event) -> Tagged:
    return Tagged(FEED, event)


JOINED = Joined(worker_id=3, shard=0, num_shards=2, dataset="mnist-sample", model="simplenet",
                rounds=50, device="Apple MPS", batch_size=32)


def test_hub_state_follows_a_session_from_listening_to_finished():
    clock = Clock()
    state = ProgressState("hub", total_rounds=100, clock=clock, expected_workers=2)
    state.apply([hub(Listening("0.0.0.0", 7341, 7342, 7343, "ab" * 8, ("10.0.0.2",), "/out")),
                 hub(WorkerJoined(worker_summary(1, 0))),
                 hub(WorkerJoined(worker_summary(2, 0))),
                 hub(StateChanged("training"))])
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
    state.apply([hub(Rejected("STALE", ""))] * 3
                + [hub(Evaluated(10, 0.5, 1.0, False)),
                   hub(WorkerLeft(worker_summary(2, 10), "silent"))])
    assert state.latest_accuracy() == 0.5 and state.workers[2].state == "silent"
    state.apply([hub(Finished(0.9712, 0.1, 100, "/out/trained_model.pth", 12.0)),
                 hub(Ended(result=True))])
    assert state.phase == "finished" and state.final.accuracy == 0.9712 and state.closed
    log = "\n".join(state.take_log())
    assert "Refused 3 requests: 3 with an update made on an old model." in log
    assert "97.12%" in log and "STALE" not in log
    assert "Worker 2 (w2) stopped answering" in log and state.take_log() == []


def test_worker_state_counts_its_pushes_and_tells_leaving_from_finishing():
    state = ProgressState("worker", name="laptop", clock=Clock())
    state.apply([worker(DeviceChosen("Apple MPS", "")), worker(JOINED)])
    state.apply([worker(Pushed(v, 0, 1.0, 0.02, 32, True, v + 1, 0)) for v in range(5)])
    assert (state.total_rounds, state.version) == (50, 5)
    row = state.workers[3]
    assert row.name == "laptop (this machine)" and row.samples == 160
    assert state.compute_ms[-1] == (5, pytest.approx(20.0))
    left = ProgressState("worker", clock=Clock())
    left.apply([worker(WorkerDone(7, 0, 6, left=True)), worker(Ended(left=True, result=True))])
    assert left.phase == "stopped" and left.final is None
    state.apply([worker(WorkerDone(5, 0, 4, left=False))])
    assert state.phase == "finished" and state.final.pushed == 5


def test_worker_state_folds_the_hubs_feed_accuracy_all_workers_and_final_accuracy():
    state = ProgressState("worker", name="w3", clock=Clock())
    state.apply([worker(msgspec.structs.replace(JOINED, device="CPU")),
                 feed(WorkerJoined(worker_summary(4, 0)))])
    assert sorted(state.workers) == [3, 4]
    rounds = [hub_round(v, [worker_summary(3, v), worker_summary(4, v)], FEED)
              for v in range(1, 6)]
    state.apply(rounds + [worker(Pushed(4, 0, 1.0, 0.02, 32, True, 5, 1)),
                          feed(Evaluated(5, 0.5, 1.0, False))])
    assert state.workers[3].name == "w3 (this machine)" and state.workers[4].name == "w4"
    assert state.workers[4].pushed == 5 and state.accuracy == [(5, 0.5)]
    assert (state.pushed, state.rejected, state.version) == (5, 1, 5)
    assert state.bytes_sent == 0  # traffic is this machine's own, polled from its channel
    state.apply([worker(WorkerDone(5, 1, 49))])  # the hub's Done before its Finished
    assert state.final.accuracy is None and state.final.pushed == 5
    state.apply([feed(Evaluated(50, 0.8, 0.5, True)),
                 feed(Finished(0.8, 0.5, 50, "/hub/model.pt", 9.0))])
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
    data = json.loads(settings.path.read_text(encoding="utf-8"))
    assert data["version"] == SETTINGS_VERSION and "pin" not in json.dumps(data).lower()
    again = Settings()
    loaded = again.host_options()
    assert (loaded.rounds, loaded.lr, loaded.workers, loaded.train_here) == (123, 0.05, 3, False)
    assert again.output_parent() == str(ui_home / "runs") and again.geometry() == "AAAA"
    settings.path.write_text(json.dumps({"version": 99, "host": {"rounds": 5}}), encoding="utf-8")
    assert Settings().host_options() == HostOptions()  # a newer format: defaults
    settings.path.write_text("{not json", encoding="utf-8")
    assert Settings().host_options() == HostOptions()
    settings.path.write_text(json.dumps({"version": 1, "host": {"rounds": "many", "lr": 1}}),
                             encoding="utf-8")
    assert Settings().host_options() == HostOptions(lr=1.0)


def test_options_parse_addresses_and_refuse_used_folders(tmp_path):
    target = JoinTarget.from_address(" tcp://10.0.0.5:7400 ")
    assert (target.host, target.port, target.pair_port) == ("10.0.0.5", 7400, None)
    assert JoinTarget.from_address("desk").port == 7341
    for bad in ("", ":7341", "host:port", "host:70000", "two words:1"):
        with pytest.raises(ConfigError):
            JoinTarget.from_address(bad)
    (tmp_path / "session.json").write_text("{}", encoding="utf-8")
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


def test_figures_agree_and_stop_at_the_end():
    clock = Clock()
    state = ProgressState("hub", total_rounds=2, clock=clock, expected_workers=2)
    state.apply([hub(WorkerJoined(worker_summary(1, 0))), hub(WorkerJoined(worker_summary(2, 0))),
                 hub(WorkerReady(worker_summary(1, 0)))])
    assert [w.state for w in state.workers.values()] == ["ready", "loading data"]
    assert "shard 1 of 2" in "\n".join(state.take_log())  # counted from 1, as workers say
    clock.now += 40  # the wait for workers is not training time
    state.apply([hub(StateChanged("training"))])
    clock.now += 5
    state.apply([hub_round(2, [worker_summary(1, 1), worker_summary(2, 1)]),
                 hub(Finished(0.9, 0.1, 2, "/m.pth", 5.0))])
    assert state.elapsed_s() == 5
    clock.now += 60  # after the end, elapsed stays
    state.apply([hub(Ended(result=True))])
    assert state.elapsed_s() == 5 and state.active_workers() == 2


def test_a_worker_that_leaves_stops_showing_live_rows_and_a_spare_says_it_takes_over():
    state = ProgressState("worker", name="laptop", clock=Clock())
    state.apply([worker(msgspec.structs.replace(JOINED, state="training"))])
    assert state.status == "Joined a running session: loading data"
    state.apply([feed(WorkerJoined(worker_summary(4, 0))),
                 hub_round(1, [worker_summary(3, 1), worker_summary(4, 1)], FEED)])
    assert {w.state for w in state.workers.values()} == {"training"}
    state.apply([worker(WorkerDone(1, 0, 1, left=True))])
    assert [state.workers[3].state, state.workers[4].state] == ["left", "not followed"]


def test_a_machine_that_rejoins_keeps_one_row():
    state = ProgressState("hub", total_rounds=10, clock=Clock(), expected_workers=1)
    first = msgspec.structs.replace(worker_summary(1, 0), key="aa" * 8)
    state.apply([hub(WorkerJoined(first)), hub(WorkerLeft(first, "silent"))])
    again = msgspec.structs.replace(worker_summary(2, 0), name="w1", key="aa" * 8)
    state.apply([hub(WorkerJoined(again))])
    assert list(state.workers) == [2] and state.workers[2].state == "loading data"
    other = msgspec.structs.replace(worker_summary(3, 0), key="bb" * 8)
    state.apply([hub_round(1, [again, other])])
    assert sorted(state.workers) == [2, 3]


def test_while_waiting_a_joined_worker_does_not_look_dead():
    clock = Clock()
    state = ProgressState("hub", total_rounds=10, clock=clock, expected_workers=2)
    state.apply([hub(WorkerJoined(worker_summary(1, 0))), hub(WorkerReady(worker_summary(1, 0)))])
    clock.now += 41
    state.tick()
    assert state.workers[1].last_seen == clock.now and state.workers[1].state == "ready"
    state.apply([hub(WorkerLeft(worker_summary(1, 0), "silent"))])  # the hub says when not
    clock.now += 5
    state.tick()
    assert state.workers[1].last_seen == clock.now - 5
