"""The real ``computeshare`` commands as processes on 127.0.0.1: a hub and workers started,
waited for, and killed, with what each said printed when a test fails."""

from __future__ import annotations

import subprocess

from helpers.net import cli


PIN = "135790"


def finish(proc: subprocess.Popen[str], timeout_s: float = 180) -> tuple[int, str, str]:
    """Wait for ``proc``: its exit code, stdout and stderr (killed after ``timeout_s``)."""
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"process timed out\nstdout:{out}\nstderr:{err}") from None
    return proc.returncode, out, err


def kill_all(*procs: subprocess.Popen[str]) -> None:
    """Stop what still runs; what each said is printed (pytest shows it when a test fails)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        try:
            out, err = proc.communicate()
        except ValueError:  # read before (finish): nothing left to show
            continue
        print(f"--- {' '.join(proc.args[3:6])} (exit {proc.returncode})\n"
              f"stdout: {(out or '')[-2000:]}\nstderr: {(err or '')[-2000:]}")


def host(out, port, *extra):
    """``computeshare host`` on 127.0.0.1:``port`` into ``out`` (PIN, quiet)."""
    return cli("host", "--pin", PIN, "--bind", "127.0.0.1", "--port", str(port), "--out",
               str(out), "--quiet", *extra)


def join(port, name, *extra):  # --wait: started with its hub, which may not listen yet
    """``computeshare join`` of the hub on 127.0.0.1:``port`` as ``name`` (CPU, 1 thread)."""
    return cli("join", f"127.0.0.1:{port}", "--pin", PIN, "--device", "cpu", "--quiet",
               "--wait", "60", "--threads", "1", "--name", name, *extra)
