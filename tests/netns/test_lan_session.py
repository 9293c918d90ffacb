"""A real (virtual) LAN: hub and workers in their own network namespaces.

Discovery across the veth links, pairing with the right PIN, refusal of a wrong one,
training to the end, and a capture of the link showing that neither the PIN nor the
model's weights ever cross it in plaintext. Needs root for `ip netns`; without it, the
same flow runs on loopback (and says so) with the capture checks skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from computeshare_desktop.data import dataset_info
from computeshare_desktop.models import build_model, flat_parameters
from testbed.netlab import VirtualLan, netns_available

pytestmark = pytest.mark.slow
PIN = "583920"
CLI = [sys.executable, "-m", "computeshare_desktop.cli"]


class LoopbackLan:
    """The VirtualLan interface on 127.0.0.1, for machines without namespaces."""

    def __enter__(self) -> "LoopbackLan":
        self.procs: list[subprocess.Popen] = []
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()

    def address(self, host: str) -> str:
        return "127.0.0.1"

    def popen(self, host: str, argv: list[str], **kw) -> subprocess.Popen:
        proc = subprocess.Popen(argv, **kw)
        self.procs.append(proc)
        return proc

    def run(self, host: str, argv: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(argv, **kw)


@pytest.fixture(params=["netns", "loopback"])
def lan(request):
    if request.param == "netns":
        if not netns_available():
            pytest.skip("network namespaces unavailable (needs root): the loopback variant runs")
        with VirtualLan(["hub", "w1", "w2"]) as net:
            yield net
    else:
        if netns_available():
            pytest.skip("namespaces available: the netns variant covers this flow")
        with LoopbackLan() as net:
            yield net


def _text(proc_result) -> str:
    return (proc_result.stdout or "") + (proc_result.stderr or "")


def test_discover_pair_train_and_nothing_in_plaintext(lan, tmp_path):
    port = 47300
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": env}
    hub_ip = lan.address("hub")
    capture = lan.capture("hub") if isinstance(lan, VirtualLan) else None
    hub = lan.popen("hub", [*CLI, "host", "--pin", PIN, "--workers", "2", "--rounds", "60",
                            "--eval-every", "0", "--codec", "raw", "--port", str(port),
                            "--interface", hub_ip, "--out", str(tmp_path / "hub"),
                            "--name", "lab session", "--quiet"], **pipes)
    try:
        listing = lan.run("w1", [*CLI, "sessions", "--interface", lan.address("w1"), "--scan",
                                 "6", "--json"], timeout=60, **pipes)
        found = [json.loads(line) for line in listing.stdout.splitlines() if line.startswith("{")]
        ours = [s for s in found if s["name"] == "lab session"]
        assert ours, _text(listing)
        assert ours[0]["addresses"][0] == hub_ip and ours[0]["port"] == port
        assert ours[0]["state"] == "waiting" and ours[0]["expected"] == 2

        # to the address found: no second scan (discovery is the listing's and the workers')
        wrong = lan.run("w2", [*CLI, "join", f"{hub_ip}:{port}", "--pin", "000000",
                               "--device", "cpu", "--quiet"], timeout=90, **pipes)
        assert wrong.returncode == 5 and "BAD_PIN" in wrong.stderr, _text(wrong)

        workers = [lan.popen(h, [*CLI, "join", "--pin", PIN, "--interface", lan.address(h),
                                 "--session", "lab session", "--device", "cpu", "--quiet",
                                 "--threads", "1", "--name", h], **pipes)
                   for h in ("w1", "w2")]
        out, err = hub.communicate(timeout=180)
        assert hub.returncode == 0, out + err
        for w in workers:
            wout, werr = w.communicate(timeout=60)
            assert w.returncode == 0, wout + werr
            assert "session finished: 60 gradients pushed" in wout
    finally:
        for proc in (hub,):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        frames = capture.stop() if capture is not None else None
    assert "final test accuracy" in out
    if capture is None:
        pytest.skip("ran on loopback (no network namespaces): the traffic capture is skipped")
    assert frames
    tcp = capture.tcp_payload()
    udp = capture.udp_payload(5353)
    assert len(tcp) > 2_000_000  # every model download and gradient crossed this link
    assert b"_computeshare" in udp  # the capture sees plaintext where there is some (mDNS)
    assert PIN.encode() not in tcp and PIN.encode() not in udp
    # Version 0 went to both workers with the raw codec: in plaintext these bytes would show.
    initial = flat_parameters(build_model("simplenet", dataset_info("mnist-sample"), seed=0))
    raw = initial.numpy().astype("<f4").tobytes()
    for start in (0, len(raw) // 2, len(raw) - 64):
        assert raw[start:start + 32] not in tcp
