"""The memory child of test_graph_hostile_bounds.py: how much memory accepting each case's
parts takes, measured from outside torch (whose allocations tracemalloc cannot see).

``python graph_bounds_child.py DIR``: DIR holds one folder per case (its ``manifest``,
``program`` and ``state`` files, as served) and ``legit``, the real graph, which is
accepted once first so that imports and caches are warm. Each case then runs in a child of
its own forked from that warm process, which reads its parts into one buffer each (as a
worker's download holds them) and then accepts them; the growth of its peak resident size
(VmHWM) and of its peak address space (VmPeak: memory asked for but never touched counts
too, so a calloc of 16 GiB shows) is that load's memory. One JSON line per case.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch

from computeshare_desktop.graph import GraphRefused
from computeshare_desktop.graph.contract import accept_parts

def status(field: str) -> int:
    """A /proc/self/status field in bytes."""
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def read_parts(folder: Path) -> dict[str, bytearray]:
    parts = {}
    for path in folder.iterdir():
        buffer = bytearray(path.stat().st_size)  # the download's one buffer, filled in place
        with path.open("rb") as file:
            file.readinto(buffer)
        parts[path.name] = buffer
    return parts


def accept(parts: dict[str, bytearray]) -> tuple[str, str]:
    fingerprint = json.loads(parts["manifest"])["fingerprint"]  # what the Welcome says too
    try:
        accepted = accept_parts(parts, hub_torch=torch.__version__, fingerprint=fingerprint)
    except GraphRefused as refused:
        return "refused", refused.reason
    except BaseException as err:  # what a worker would die of
        return type(err).__name__, str(err)[:200]
    del accepted
    return "accepted", ""


def measure(folder: Path) -> dict[str, object]:
    parts = read_parts(folder)
    rss, vm = status("VmHWM"), status("VmPeak")
    began = time.process_time()
    outcome, reason = accept(parts)
    return {"case": folder.name, "outcome": outcome, "reason": reason,
            "seconds": time.process_time() - began,
            "rss_growth": status("VmHWM") - rss, "vm_growth": status("VmPeak") - vm}


def main(root: Path) -> None:
    if not hasattr(os, "fork"):  # each case in a forked child: POSIX only (/proc: Linux)
        raise SystemExit("graph_bounds_child needs os.fork")
    torch.set_num_threads(1)  # forked children must not inherit busy thread pools
    print(json.dumps({**measure(root / "legit"), "case": "warm-up"}), flush=True)
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            os.write(write, json.dumps(measure(folder)).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            line = pipe.read()
        _, code = os.waitpid(pid, 0)
        print(line if line else json.dumps({"case": folder.name, "outcome": f"died {code}"}),
              flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
