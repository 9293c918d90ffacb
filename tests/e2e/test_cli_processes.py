"""The real ``computeshare`` commands as processes on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import pytest
import torch

from computeshare_desktop.events import WorkerJoined, WorkerLeft
from computeshare_desktop.protocol.ports import HubPorts
from computeshare_desktop.transport import Identity
from helpers.cli import run_cli
from helpers.net import EventListener, cli, free_ports, metrics, pair, wait_for
from helpers.processes import PIN, finish, host, join, kill_all

pytestmark = pytest.mark.slow
KILL_ROUNDS = 800  # the replacement must join long before the end: two workers at the end
RESUME_ROUNDS = 200


def test_host_two_joins_then_evaluate_agrees(tmp_path):
    port = free_ports()
    hub = host(tmp_path, port, "--workers", "2", "--rounds", "80", "--eval-every", "40")
    workers = [join(port, f"w{i}") for i in range(2)]
    try:
        code, out, err = finish(hub)
        assert code == 0, err
        for w in workers:
            wcode, wout, werr = finish(w, 60)
            assert wcode == 0, werr
            assert "session finished" in wout
    finally:
        kill_all(hub, *workers)
    final = float(re.search(r"final test accuracy: ([\d.]+)%", out).group(1))
    state = torch.load(tmp_path / "trained_model.pth", weights_only=True)
    assert isinstance(state, dict) and all(isinstance(v, torch.Tensor) for v in state.values())
    records = metrics(tmp_path)
    rounds = [r for r in records if r["type"] == "round"]
    evals = [r for r in records if r["type"] == "eval"]
    assert [r["round"] for r in rounds] == list(range(1, 81))
    assert {"loss", "contributors", "rejected", "bytes_in", "bytes_out", "seconds",
            "version"} <= rounds[0].keys()
    assert evals[-1]["final"] and evals[-1]["version"] == 80
    session = json.loads((tmp_path / "session.json").read_text(encoding="utf-8"))
    assert session["config"]["rounds"] == 80 and "pin" not in json.dumps(session).lower()
    files = write_digits(tmp_path / "digits", 10)
    (tmp_path / "digits" / "notes.png").write_text("not an image", encoding="utf-8")
    # three commands that only read the session's files: they start side by side
    readers = [cli("evaluate", str(tmp_path / "trained_model.pth"), "--json"),
               cli("evaluate", str(tmp_path / "trained_model.pt2"), "--json"),
               cli("predict", str(tmp_path / "trained_model.pt2"), *files,
                   str(tmp_path / "digits" / "notes.png"), "--json")]
    try:
        (code, eout, eerr), (code2, eout2, eerr2), (pcode, pout, perr) = map(finish, readers)
    finally:
        kill_all(*readers)
    assert code == 0, eerr
    accuracy = json.loads(eout)["accuracy"]
    assert accuracy == pytest.approx(evals[-1]["accuracy"], abs=1e-9)
    assert accuracy * 100 == pytest.approx(final, abs=0.006)
    assert accuracy > 0.8
    # the eval program scores the same, and predicts digits the test writes as PNG files
    assert code2 == 0, eerr2
    assert json.loads(eout2)["accuracy"] == pytest.approx(accuracy, abs=0.01)
    assert json.loads((tmp_path / "classes.json").read_text(encoding="utf-8")) == list("0123456789")
    assert pcode == 2 and "notes.png" in pout and "1 of 11 files" in perr, perr
    lines = [json.loads(line) for line in pout.splitlines()]
    assert [x["file"] for x in lines] == [*files, str(tmp_path / "digits" / "notes.png")]
    right = [x["top"][0]["class"] == Path(x["file"]).stem[-1] for x in lines[:-1]]
    assert sum(right) >= 7 and "error" in lines[-1]


def write_digits(folder: Path, n: int) -> list[str]:
    """The first ``n`` test digits of mnist-sample as PNG files named after their label."""
    from PIL import Image

    from computeshare_desktop.data import load_dataset

    folder.mkdir()
    test = load_dataset("mnist-sample", "test")
    for i in range(n):
        Image.fromarray(test.images[i, 0].numpy()).save(folder / f"{i}_{test.labels[i]}.png")
    return [str(folder / f"{i}_{test.labels[i]}.png") for i in range(n)]


def test_killed_worker_round_closes_at_deadline_and_replacement_takes_shard(tmp_path):
    port = free_ports()
    hub = host(tmp_path, port, "--workers", "2", "--rounds", str(KILL_ROUNDS), "--eval-every",
               "0")
    observer = Identity.generate()
    _, hub_key = wait_for(lambda: _try_pair(port, observer), 30, "pairing an observer")
    # listening needs a paired key
    events = EventListener(HubPorts.at(port).events, observer, hub_key)
    w1, w2 = join(port, "steady"), join(port, "doomed")
    replacement = None
    try:
        wait_for(lambda: len([r for r in metrics(tmp_path) if r["type"] == "round"]) >= 20,
                 90, "20 rounds")
        joined = {e.worker.name: e.worker for e in events.of_kind(WorkerJoined)}
        doomed_shard = joined["doomed"].shard
        # The spare starts now: while the session is full it asks again every 2 s, so it
        # takes the freed shard soon after the reaping, whatever its start-up costs.
        replacement = join(port, "replacement")
        w2.kill()
        killed_at = len([r for r in metrics(tmp_path) if r["type"] == "round"])
        left = wait_for(lambda: [e for e in events.of_kind(WorkerLeft)
                                 if e.worker.name == "doomed"], 30, "worker reaped")
        assert left[0].reason == "silent"
        new = wait_for(lambda: [e.worker for e in events.of_kind(WorkerJoined)
                                if e.worker.name == "replacement"], 60, "replacement")
        assert new[0].shard == doomed_shard
        code, out, err = finish(hub, 240)
        assert code == 0, err
        assert finish(replacement, 60)[0] == 0
        assert finish(w1, 60)[0] == 0
    finally:
        events.close()
        kill_all(hub, w1, w2, *([replacement] if replacement else []))
    rounds = [r for r in metrics(tmp_path) if r["type"] == "round"]
    assert [r["round"] for r in rounds] == list(range(1, KILL_ROUNDS + 1))
    after_kill = rounds[killed_at:]
    deadline_rounds = [r for r in after_kill[:5] if r["contributors"] == 1 and r["seconds"] >= 1.9]
    assert deadline_rounds, "no round closed at its deadline after the kill"
    assert rounds[-1]["contributors"] == 2  # the replacement trained to the end


def _try_pair(port, identity):
    try:
        reply, hub_key = pair(port, PIN, "observer", identity)
    except TimeoutError:
        return None
    return (reply, hub_key) if hub_key else None


def test_hub_killed_then_resumed_workers_reconnect(tmp_path):
    port = free_ports()
    args = ("--workers", "2", "--rounds", str(RESUME_ROUNDS), "--eval-every", "0")
    hub = host(tmp_path, port, *args)
    workers = [join(port, f"w{i}") for i in range(2)]
    hub2 = None
    try:
        wait_for(lambda: (tmp_path / "checkpoint.pt").exists() and len(metrics(tmp_path)) >= 60,
                 90, "a checkpoint")
        hub.kill()
        hub.communicate()
        saved = torch.load(tmp_path / "checkpoint.pt", weights_only=True)["version"]
        assert saved >= 50
        hub2 = host(tmp_path, port, "--resume")
        code, out, err = finish(hub2, 240)
        assert code == 0, err
        for w in workers:
            assert finish(w, 60)[0] == 0
    finally:
        kill_all(hub, *workers, *([hub2] if hub2 else []))
    rounds = [r for r in metrics(tmp_path) if r["type"] == "round"]
    resumed = [r["version"] for r in rounds if r["version"] > saved]
    assert resumed[-1] == RESUME_ROUNDS
    # no version lost after resume
    assert sorted(set(resumed)) == list(range(saved + 1, RESUME_ROUNDS + 1))
    assert "final test accuracy" in out


def test_cli_errors_are_one_line_with_exit_codes(tmp_path, capsys):
    refused, busy, pinned = distinct_ports(3)
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", busy))
        blocker.listen()
        # the commands are independent (each its own port or none): they run side by side
        hub = host(tmp_path / "pin", pinned, "--workers", "1", "--rounds", "5")
        procs = [cli("join", f"127.0.0.1:{refused}", "--pin", "1", "--give-up", "2",
                     "--device", "cpu"),
                 host(tmp_path / "busy", busy),
                 # --wait: the hub may not listen yet
                 cli("join", f"127.0.0.1:{pinned}", "--pin", "999999", "--device", "cpu",
                     "--give-up", "20", "--wait", "30")]
        try:
            # Refused before anything starts: the same main in this process, meanwhile (three
            # more processes importing torch slowed the others' start on 2 cores).
            argparse_said = [checked(capsys, "host", "--rounds", "zero"),
                             checked(capsys, "host", "--rounds", "0", "--out",
                                     str(tmp_path / "x")),
                             checked(capsys, "evaluate", str(tmp_path / "missing.pth"))]
            said = [finish(proc, 240) for proc in procs]  # one after the other: 270 s in all
        finally:
            kill_all(hub, *procs)
    (code, out, err), (busy_code, _, busy_err), (pin_code, _, pin_err) = said
    assert code == 3 and f"connection refused by 127.0.0.1:{refused}" in err
    assert "Traceback" not in err
    assert busy_code == 4 and "in use" in busy_err and "Traceback" not in busy_err
    (code, _, err), (code2, _, err2), (code3, _, err3) = argparse_said
    assert code == 2 and "invalid int value" in err
    assert code2 == 2 and "rounds must be at least 1" in err2
    assert code3 == 2 and "cannot read" in err3
    assert pin_code == 5 and "BAD_PIN" in pin_err and "Traceback" not in pin_err
    assert os.path.exists(tmp_path / "pin" / "session.json")


def checked(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``computeshare ARGV`` run in this process (helpers.cli.run_cli): its exit code, argparse's
    included, and what it printed."""
    try:
        code = run_cli(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def distinct_ports(n: int) -> list[int]:
    """``n`` free_ports() results whose three ports do not overlap."""
    ports: list[int] = []
    while len(ports) < n:
        port = free_ports()
        if all(abs(port - other) > 2 for other in ports):
            ports.append(port)
    return ports
