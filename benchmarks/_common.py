"""What every benchmark shares: summary statistics, Markdown tables, the machine, child
processes and free ports."""

from __future__ import annotations

import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from testbed.ports import free_ports

__all__ = ["CLI", "free_ports", "median", "median_known", "p90", "table", "table_row", "machine",
           "read_jsonl", "home_env", "kill", "stop", "wait_all", "exit_on_signal",
           "write_text"]

# `computeshare ARGS` as a child process: the command line, without the installed script
CLI = (sys.executable, "-m", "computeshare_desktop.cli")


# ---------------------------------------------------------------------------- statistics
def median(xs: Iterable[float]) -> float:
    """The median (of ints, an int where the middle is one value: as statistics.median)."""
    return statistics.median(xs)


def median_known(values: Sequence[float | None]) -> float | None:
    """The median of the known values; None unless more than half of them are known."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if len(known) * 2 > len(values) else None


def p90(xs: Sequence[float]) -> float:
    """The 90th percentile, interpolated linearly between the two nearest values."""
    return float(np.percentile(np.asarray(xs, dtype=float), 90))


# ---------------------------------------------------------------------------- reports
def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str = "") -> str:
    """A GitHub Markdown table; ``align`` has an ``r`` for each right-aligned column."""
    marks = ["---:" if i < len(align) and align[i] == "r" else "---"
             for i in range(len(headers))]
    return "\n".join([table_row(headers), "|" + "|".join(marks) + "|",
                      *(table_row(row) for row in rows)])


def table_row(cells: Sequence[Any]) -> str:
    """One line of a Markdown table (to print a table as its rows are measured)."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def machine() -> dict[str, str]:
    """This machine and the versions that matter, for a report's header and its records."""
    import torch
    import zmq
    import zstandard

    from computeshare_desktop import __version__

    return {"cpus": str(os.cpu_count()), "nproc": str(len(os.sched_getaffinity(0))),
            "cpu": _cpu_model(), "python": platform.python_version(),
            "torch": torch.__version__, "pyzmq": zmq.__version__,
            "libzmq": zmq.zmq_version(), "zstandard": zstandard.__version__,
            "computeshare": __version__, "os": platform.platform()}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The whole JSON lines of a file another process may be writing ([] if none yet)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:  # a line being written right now
            break
    return records


def write_text(text: str, dest: str | Path | None) -> None:
    """A report to a file, or to standard output for ``-`` (nothing for None)."""
    if dest == "-":
        print(text)
    elif dest:
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        Path(dest).write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------------- processes
def home_env(home: str | Path, **extra: str) -> dict[str, str]:
    """This environment for a child `computeshare`, its keys kept in ``home`` (a throwaway
    folder, never the user's own)."""
    return {**os.environ, "COMPUTESHARE_HOME": str(home), **extra}


def kill(proc: subprocess.Popen[Any]) -> None:
    """Kill a process we started and its process group (a demo's workers, for one)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def stop(procs: Sequence[subprocess.Popen[Any]], first: int = signal.SIGTERM,
         grace_s: float = 30.0) -> list[subprocess.Popen[Any]]:
    """Send ``first`` to every live process, give them ``grace_s`` in all to end, then
    SIGKILL the rest; the processes that had to be killed."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(first)
    deadline = time.monotonic() + grace_s
    killed = [proc for proc in procs if not _ended(proc, deadline)]
    for proc in killed:
        proc.kill()
        proc.wait()
    return killed


def wait_all(procs: Sequence[subprocess.Popen[Any]], timeout_s: float, what: str) -> None:
    """Wait for every process to exit with 0; RuntimeError naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        if not _ended(proc, deadline):
            raise RuntimeError(f"{what}: timed out after {timeout_s:.0f} s")
        if proc.returncode != 0:
            raise RuntimeError(f"{what}: {proc.args!r} exited with {proc.returncode}")


def _ended(proc: subprocess.Popen[Any], deadline: float) -> bool:
    """Whether ``proc`` exits by ``deadline`` (a moment's wait at least)."""
    try:
        proc.wait(max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return True


def exit_on_signal(signum: int, frame: Any) -> None:
    """A signal handler that unwinds through ``finally`` blocks, which stop the children."""
    raise SystemExit(128 + signum)
