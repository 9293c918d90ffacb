"""`computeshare join` on a machine the host removes: it ends cleanly with exit code 8 and
the plain fact, not an error and not advice to retry; a later `join` hears the same, and
without the PIN it is asked for it (the machine forgot the hub's key, as the hub forgot its)."""

from __future__ import annotations

import threading

from helpers.cli import run_cli
from helpers.net import PIN, RunningHub, wait_for

from computeshare_desktop.errors import ExitCode

REMOVED = "the host removed this machine from this session"


def test_join_exits_8_when_the_host_removes_the_machine(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COMPUTESHARE_HOME", str(tmp_path / "home"))
    hub = RunningHub(tmp_path / "hub", workers=1, rounds=100_000, batch_size=8, eval_every=0)
    argv = ["join", f"127.0.0.1:{hub.port}", "--pin", PIN, "--name", "vm", "--quiet",
            "--device", "cpu", "--threads", "1"]
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(run_cli(argv)), name="test-join")
    try:
        thread.start()
        wait_for(lambda: hub.session.server.version >= 3, 60, "training")
        (member,) = hub.session.core.members.members()
        hub.server.kick(member.worker_id)
        thread.join(30)
        assert codes == [ExitCode.REMOVED] and ExitCode.REMOVED == 8
        err = capsys.readouterr().err
        assert f"computeshare join: {REMOVED}" in err
        assert "error" not in err.lower() and "next session with the PIN" in err
        assert run_cli(argv) == ExitCode.REMOVED  # with the PIN again: the same answer
        assert REMOVED in capsys.readouterr().err
        # its key was forgotten with the removal: without the PIN it is asked for the PIN
        no_pin = [a for a in argv if a not in ("--pin", PIN)]
        assert run_cli(no_pin) == ExitCode.USAGE
        assert "a PIN is needed (the host of this hub removed this machine from a " \
            "session)" in capsys.readouterr().err  # and why
    finally:
        hub.close()
        thread.join(10)
