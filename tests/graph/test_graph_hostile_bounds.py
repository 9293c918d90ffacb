"""A worker a hostile hub cannot hurt.

Each hostile graph of hostile_graphs.py (the memory corruption, exponential work,
unbounded allocation and crashes an attack on the loader found) is refused through the
one contract (``accept_parts``, the hub's check and every worker's) with its reason,
nothing of it ran (the canary), within 2 s, and within twice the memory its manifest
declares (measured in a forked child, from outside torch: graph_bounds_child.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import graph_canary
import pytest
import torch
from hostile_graphs import BY_NAME, HOSTILE, Ballasted, declared_bytes, legit

from computeshare_desktop.graph import GraphRefused, base, export_training_graph, rules
from computeshare_desktop.graph.contract import accept_parts

CHILD = Path(__file__).with_name("graph_bounds_child.py")
SECONDS = 2.0


@pytest.fixture(scope="session")
def ballasted():
    """The stranger's network with 32 MiB of frozen weights, and its training graph."""
    torch.manual_seed(0)
    model = Ballasted().train()
    return model, export_training_graph(model, torch.randn(4, 3, 16, 16))


@pytest.fixture(scope="session")
def bounds(ballasted, tmp_path_factory) -> dict[str, dict]:
    """Every case's load, measured by the memory child: case name -> its line."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the memory child forks and reads /proc (Linux)")
    root = tmp_path_factory.mktemp("hostile")
    cases = {"legit": legit(ballasted[1])}
    cases.update({f"case{i:02d}": case.parts(ballasted[1]) for i, case in enumerate(HOSTILE)})
    for folder, parts in cases.items():
        (root / folder).mkdir()
        for name, data in parts.items():
            path = root / folder / name
            if name == "state" and folder != "legit" and data == cases["legit"]["state"]:
                path.symlink_to(root / "legit" / "state")  # most keep the real state
            else:
                path.write_bytes(data)
    mark = root / "canary"
    run = subprocess.run([sys.executable, str(CHILD), str(root)], capture_output=True,
                         text=True, timeout=120, cwd=CHILD.parent,
                         env={**_env(), graph_canary.MARK: str(mark)})
    assert run.returncode == 0, run.stderr[-2000:]
    assert not mark.exists()
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    names = {f"case{i:02d}": case.name for i, case in enumerate(HOSTILE)}
    return {names.get(line["case"], line["case"]): {**line, "declared": declared_bytes(
        cases[line["case"]]) if line["case"] in cases else 0} for line in lines}


def _env() -> dict[str, str]:
    import os
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def refusal(parts) -> tuple[str, float]:
    fingerprint = json.loads(parts["manifest"])["fingerprint"]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # CPU time of one thread: another test's load cannot make
    began = time.process_time()  # torch's idle threads spin and count here
    try:
        with pytest.raises(GraphRefused) as info:
            accept_parts(parts, hub_torch=torch.__version__, fingerprint=fingerprint)
        return info.value.reason, time.process_time() - began
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("name", [case.name for case in HOSTILE])
def test_a_hostile_graph_is_refused_with_its_reason_in_time(name, ballasted, canary):
    case = BY_NAME[name]
    reason, seconds = refusal(case.parts(ballasted[1]))
    assert re.search(case.match, reason), reason
    assert not canary.exists() and graph_canary.calls == []
    assert seconds < SECONDS, f"{seconds:.2f} s"


@pytest.mark.parametrize("name", [case.name for case in HOSTILE])
def test_a_hostile_graph_is_refused_within_twice_what_its_manifest_declares(name, bounds):
    line = bounds[name]
    assert line["outcome"] == "refused" and re.search(BY_NAME[name].match, line["reason"]), line
    limit = 2 * line["declared"]
    assert line["rss_growth"] < limit and line["vm_growth"] < limit, line
    assert line["seconds"] < SECONDS, line


def test_the_real_graph_loads_within_twice_what_its_manifest_declares(bounds):
    """The control: the same measure on the graph itself, which is accepted, holding its
    32 MiB of state once more (the module's own copy)."""
    line = bounds["legit"]
    assert line["outcome"] == "accepted", line
    assert 2**25 < line["vm_growth"] < 2 * line["declared"], line
    assert line["rss_growth"] < 2 * line["declared"], line


def test_shape_propagation_alone_lets_short_statistics_through(ballasted, monkeypatch):
    """Why the rules exist: without them, batch norm statistics of 1 value for 8 channels
    pass every check, fake tensors included (their kernels do not check either), and the
    CPU kernel would read and write past them."""
    monkeypatch.setattr(rules, "RULES", {})
    parts = BY_NAME["batch norm statistics of 1 for 8 channels"].parts(ballasted[1])
    reason, _ = refusal(parts)
    assert "not the one the hub announced" in reason  # only our test's fingerprint differs


def test_a_rule_stops_a_call_the_checks_did_not_see(ballasted):
    """At every call, the rules again: a statistics buffer that is not what the checks saw
    stops the forward before batch norm runs, with a refusal, not a crash."""
    parts = legit(ballasted[1])
    accepted = accept_parts(parts, hub_torch=torch.__version__,
                            fingerprint=ballasted[1].fingerprint)
    module = accepted.model.module
    module(torch.randn(5, 3, 16, 16))  # any batch: the guards pass real calls
    module.get_submodule("stem.1")._buffers["running_mean"] = torch.zeros(1)
    with pytest.raises(GraphRefused, match="running_mean is \\(1,\\), not \\[8\\]"):
        module(torch.randn(5, 3, 16, 16))


@pytest.mark.parametrize("failure", [
    RecursionError("maximum recursion depth exceeded"),
    MemoryError(),
    RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate "
                 "memory"),
    RuntimeError("Stride calculation overflowed"),
])
def test_any_failure_while_checking_is_a_refusal_naming_it(ballasted, monkeypatch, failure):
    """The hub must hear GRAPH_REFUSED with a reason, never see a worker just leave."""
    from computeshare_desktop.graph import checks

    def fail(*args, **kwargs):
        raise failure
    monkeypatch.setattr(checks, "_check_signature", fail)
    reason, _ = refusal(legit(ballasted[1]))
    assert type(failure).__name__ in reason


@pytest.mark.parametrize("version, release", [
    ("2.14.1", "2.14.1"), ("2.14.1+cu130", "2.14.1"), ("2.14.1+cpu", "2.14.1"),
    ("2.6.0.dev20241001+cpu", "2.6.0"), ("2.5.0a0+git1a2b3c4", "2.5.0"),
    ("2.5.0a0+e000cf0ad9.nv24.10", "2.5.0"), ("2.5.0rc1", "2.5.0"),
])
def test_the_versions_torch_writes_are_read(version, release):
    assert base.release(version) == release


@pytest.mark.parametrize("version", [
    "2.14.1abc", "2.14.1 ", "2.14.1+", "2.14.1\n", "2.14.1+cu130;x", "2.14.1.", "v2.14.1",
    "2.14", "2.14.1+" + "a" * 70,
])
def test_a_version_with_anything_more_is_refused(version):
    with pytest.raises(GraphRefused, match="unreadable torch version"):
        base.release(version)


def test_a_manifest_announces_no_more_than_a_model_frame_carries():
    from computeshare_desktop.codec.base import MAX_NUMEL
    from computeshare_desktop.protocol.graphs import MAX_TRAINABLE_NUMEL

    assert MAX_TRAINABLE_NUMEL == MAX_NUMEL
