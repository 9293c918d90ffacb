"""Bad model input, as a person meets it: ``computeshare host --model ...`` with each
kind of bad model exits with one clear line and exit code 2 before the session opens (no
port bound, the output folder as it was). In-process through the CLI's ``main(argv)``, and
one real process for the export failure.

The same errors one layer down (the spec, the file, the weights, the program, the export, a
worker refusing a graph) have their own tests in tests/models/, tests/graph/,
tests/hub/test_hub_graph.py and tests/worker/."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest
import torch

from computeshare_desktop.errors import ExitCode
from computeshare_desktop.events import ModelRefused, WorkerLeft
from computeshare_desktop.hub.user_model import ShippedGraph
from computeshare_desktop.protocol.graphs import decode_manifest, encode_manifest, program_sha256
from computeshare_desktop.service import host as host_service
from helpers.cli import run_cli
from helpers.graph import model_file
from helpers.net import PIN as NET_PIN
from helpers.net import RunningHub, cli, wait_for

PIN = "975310"

LINEAR = '''
from torch import nn


class Net(nn.Module):
    def __init__(self, num_classes, in_channels):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(in_channels * 28 * 28, {classes}))

    def forward(self, x):
        return self.body(x)
'''

NEEDS_DEPTH = '''
from torch import nn


class Net(nn.Module):
    def __init__(self, num_classes, depth):
        super().__init__()
        self.fc = nn.Linear(784, num_classes)
'''

# Branches on a tensor's value: torch.export cannot trace it.
BRANCHY = '''
from torch import nn


class Net(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.fc = nn.Linear(784, num_classes)

    def forward(self, x):
        y = self.fc(x.flatten(1))
        return y if x.sum() > 0 else -y
'''


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def missing_file(folder: Path) -> tuple[list[str], list[str]]:
    path = folder / "nowhere.py"
    return ["--model", f"{path}:Net"], [f"model file {path} does not exist"]


def missing_name(folder: Path) -> tuple[list[str], list[str]]:
    path = write(folder, "net.py", LINEAR.format(classes="num_classes"))
    return ["--model", f"{path}:Resnet"], [f"{path} has no 'Resnet'; it defines Net "
                                            f"(nn.Module class)"]


def unknown_arguments(folder: Path) -> tuple[list[str], list[str]]:
    path = write(folder, "net.py", NEEDS_DEPTH)
    return ["--model", f"{path}:Net"], [
        "net.py:Net needs an argument 'depth', which ComputeShare cannot give",
        "(give depth a default in the file)"]


def wrong_classes(folder: Path) -> tuple[list[str], list[str]]:
    path = write(folder, "net.py", LINEAR.format(classes=7))
    return ["--model", f"{path}:Net"], [
        "the model returns torch.float32 (2, 7), expected float (2, 10) (batch, classes): "
        "size its last layer to the dataset's 10 classes"]


def export_failure(folder: Path) -> tuple[list[str], list[str]]:
    path = write(folder, "net.py", BRANCHY)
    return ["--model", f"{path}:Net"], [
        "the model cannot be exported as a graph for workers: Net's own forward: "
        "GuardOnDataDependentSymNode: Could not guard on data-dependent expression",
        "hint: the forward branches on tensor values (data-dependent control flow)",
        "torch.where", "torch.cond"]


def weights_that_do_not_fit(folder: Path) -> tuple[list[str], list[str]]:
    path = write(folder, "net.py", LINEAR.format(classes="num_classes"))
    weights = folder / "other.pth"
    torch.save({"body.1.weight": torch.zeros(7, 784), "body.1.bias": torch.zeros(7),
                "head.weight": torch.zeros(1)}, weights)
    return ["--model", f"{path}:Net", "--weights", str(weights)], [
        f"the weights in {weights} do not fit net.py:Net: unexpected keys (1): head.weight; "
        "wrong shapes (2): body.1.weight (7, 784) in the file, (10, 784) in the model"]


def not_a_program(folder: Path) -> tuple[list[str], list[str]]:
    path = folder / "model.pt2"
    path.write_text("my notes, not a program", encoding="utf-8")
    return ["--model", str(path)], [f"{path} is not a torch.export program (.pt2)"]


CASES = [missing_file, missing_name, unknown_arguments, wrong_classes, export_failure,
         weights_that_do_not_fit, not_a_program]


class NoServer:
    """Stands in for HubServer: the test fails if the hub gets as far as binding a port."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("the session opened: HubServer was created")


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_host_refuses_a_bad_model_before_the_session_opens(case, tmp_path, monkeypatch,
                                                           capsys) -> None:
    model_args, expected = case(tmp_path)
    out = tmp_path / "session"
    out.mkdir()
    (out / "notes.txt").write_text("the person's own file", encoding="utf-8")
    monkeypatch.setattr(host_service, "HubServer", NoServer)
    monkeypatch.setenv("COMPUTESHARE_PIN", PIN)
    code = run_cli(["host", *model_args, "--dataset", "mnist-sample", "--out", str(out),
                 "--bind", "127.0.0.1", "--port", "0", "--no-advertise", "--quiet"])
    stdout, stderr = capsys.readouterr()
    assert code == ExitCode.USAGE == 2, stderr
    ours = [line for line in stderr.splitlines() if line.startswith("computeshare host: ")]
    assert len(ours) == 1 and ours[0].startswith("computeshare host: error: "), stderr
    message = stderr[stderr.index(ours[0]):]
    for words in expected:
        assert words in message, message
    assert len(message.split("  hint: ")[0].splitlines()) <= 4, message  # first lines only
    assert "Traceback" not in stderr
    assert "listening" not in stdout and PIN not in stdout  # no session was announced
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    assert (out / "notes.txt").read_text(encoding="utf-8") == "the person's own file"


@pytest.mark.slow
def test_a_real_host_process_exits_2_on_a_model_that_does_not_export(tmp_path) -> None:
    model_args, expected = export_failure(tmp_path)
    out = tmp_path / "session"
    proc = cli("host", *model_args, "--dataset", "mnist-sample", "--out", str(out), "--bind",
               "127.0.0.1", "--port", "0", "--no-advertise", "--quiet",
               env={"COMPUTESHARE_PIN": PIN, "COMPUTESHARE_HOME": os.environ.get(
                   "COMPUTESHARE_HOME", str(tmp_path / "home"))})
    try:
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, stderr
    error = re.search(r"(?ms)^computeshare host: error: .*", stderr)
    assert error is not None, stderr
    for words in expected:
        assert words in error.group(0), error.group(0)
    assert "Traceback" not in stderr and "listening" not in stdout
    assert not out.exists()


@pytest.mark.slow
def test_a_worker_refuses_a_forbidden_op_and_the_hub_carries_on(tmp_path, monkeypatch,
                                                                 capsys) -> None:
    """Over real sockets: a graph edited by hand to call an op off the allow-list is refused
    by ``join`` (exit 5, naming the op), the hub is told and frees the shard, and the next
    worker, given the true graph, trains the session to its end."""
    hub = RunningHub(tmp_path / "hub", workers=1, rounds=3, batch_size=8, eval_every=0,
                     model=model_file(tmp_path, width=4))
    monkeypatch.setenv("COMPUTESHARE_PIN", NET_PIN)
    join = ["join", f"127.0.0.1:{hub.port}", "--device", "cpu", "--quiet", "--threads", "1"]
    try:
        true_graph = hub.session.core.graph
        hub.session.core.graph = with_forbidden_op(true_graph)
        assert run_cli([*join, "--name", "wary"]) == ExitCode.REFUSED == 5
        err = capsys.readouterr().err
        assert "computeshare join: error: model graph refused: " in err and "_foobar" in err, err
        refused = wait_for(lambda: hub.of_kind(ModelRefused), 10, "the hub told")
        assert refused[0].name == "wary" and "_foobar" in refused[0].reason
        assert [e.reason for e in hub.of_kind(WorkerLeft)] == ["model_refused"]
        assert hub.rounds() == [] and hub.thread.is_alive()
        hub.session.core.graph = true_graph
        assert run_cli([*join, "--name", "trusting"]) == 0
        assert "graph checked" in capsys.readouterr().err
        assert hub.join(60) is not None
    finally:
        hub.close()
    assert [r.version for r in hub.rounds()] == [1, 2, 3]


def with_forbidden_op(graph: ShippedGraph) -> ShippedGraph:
    """``graph`` with its first convolution calling an op off the allow-list, and the
    manifest updated to match (as a hostile hub would)."""
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
