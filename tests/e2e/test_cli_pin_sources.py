"""The PIN stays off the command line: from COMPUTESHARE_PIN, or typed at a prompt."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import pytest

from helpers.net import PIN, RunningHub


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_join_prompts_for_the_pin_on_a_terminal(tmp_path):
    import pty  # POSIX only: imported here so that Windows collects the module

    hub = RunningHub(tmp_path / "hub", workers=1, rounds=5, batch_size=8, eval_every=0)
    leader, follower = pty.openpty()
    env = {**os.environ, "COMPUTESHARE_HOME": str(tmp_path / "home")}
    env.pop("COMPUTESHARE_PIN", None)
    proc = subprocess.Popen([sys.executable, "-m", "computeshare_desktop.cli", "join",
                             f"127.0.0.1:{hub.port}", "--device", "cpu", "--quiet"],
                            stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    try:
        prompt = b""
        deadline = time.monotonic() + 60
        while b"PIN" not in prompt and time.monotonic() < deadline:  # typed after the prompt:
            if select.select([proc.stderr], [], [], 0.5)[0]:  # getpass flushes the input first
                prompt += os.read(proc.stderr.fileno(), 1024)
        assert b"session PIN" in prompt
        os.write(leader, PIN.encode() + b"\n")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert b"session finished" in out
        assert PIN not in " ".join(map(str, proc.args))  # never on the command line
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(leader)
        os.close(follower)
        hub.close()


def test_join_without_a_pin_or_a_terminal_says_how_to_give_one(tmp_path):
    """stdin is an empty pipe, not DEVNULL: Windows says NUL is a terminal (bpo-28654)."""
    env = {**os.environ, "COMPUTESHARE_HOME": str(tmp_path / "home")}
    env.pop("COMPUTESHARE_PIN", None)
    hub = RunningHub(tmp_path / "hub", workers=1, rounds=5, batch_size=8, eval_every=0)
    try:  # a hub is there (a missing one is reported first: see test_probe)
        proc = subprocess.run([sys.executable, "-m", "computeshare_desktop.cli", "join",
                               f"127.0.0.1:{hub.port}", "--device", "cpu"],
                              input="", capture_output=True, text=True,
                              env=env, timeout=60)
    finally:
        hub.close()
    assert proc.returncode == 2 and "COMPUTESHARE_PIN" in proc.stderr
