"""What the tests need that Linux, macOS and Windows each do differently (not a test module).

Peak memory, a line from a child's pipe with a timeout, loopback source addresses, and a
stop that a child can catch. Each helper says what it does where, and returns None or
False where it cannot, so that a test can skip one check with a reason instead of failing.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from typing import IO, Any


def peak_rss_bytes() -> int | None:
    """This process's peak resident memory in bytes; None where it cannot be read."""
    if sys.platform == "win32":
        return _windows_peak_working_set()
    try:
        import resource  # POSIX only
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS: bytes; Linux: KiB


def _windows_peak_working_set() -> int | None:
    import ctypes
    from ctypes import wintypes

    class Counters(ctypes.Structure):  # PROCESS_MEMORY_COUNTERS (psapi.h)
        _fields_ = [("cb", wintypes.DWORD), ("PageFaultCount", wintypes.DWORD),
                    *((name, ctypes.c_size_t) for name in (
                        "PeakWorkingSetSize", "WorkingSetSize", "QuotaPeakPagedPoolUsage",
                        "QuotaPagedPoolUsage", "QuotaPeakNonPagedPoolUsage",
                        "QuotaNonPagedPoolUsage", "PagefileUsage", "PeakPagefileUsage"))]

    kernel32 = ctypes.WinDLL("kernel32")
    kernel32.GetCurrentProcess.restype = wintypes.HANDLE
    kernel32.K32GetProcessMemoryInfo.argtypes = [wintypes.HANDLE, ctypes.POINTER(Counters),
                                                 wintypes.DWORD]
    kernel32.K32GetProcessMemoryInfo.restype = wintypes.BOOL
    counters = Counters()
    counters.cb = ctypes.sizeof(Counters)
    if not kernel32.K32GetProcessMemoryInfo(kernel32.GetCurrentProcess(),
                                            ctypes.byref(counters), counters.cb):
        return None
    return int(counters.PeakWorkingSetSize)


def readline_within(stream: IO[str], timeout_s: float) -> str | None:
    """The next line of a child's pipe, or None when none came within ``timeout_s``.

    select() waits on pipes only on POSIX (on Windows it takes sockets alone), so a
    thread reads. After a timeout the thread is still blocked on the pipe: kill the child
    (which closes the pipe) and the thread ends.
    """
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stream.readline()),
                              name="readline-within", daemon=True)
    reader.start()
    reader.join(timeout_s)
    return lines[0] if lines else None


def loopback_aliases_work(address: str = "127.0.0.10") -> bool:
    """True when a socket can use ``address`` (in 127.0.0.0/8, not 127.0.0.1) as its own:
    Linux and Windows route all of 127/8 to loopback; macOS has only 127.0.0.1 unless an
    alias was added (``ifconfig lo0 alias 127.0.0.10``)."""
    with socket.socket() as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            return False
    return True


# Stopping a child so that it can clean up. POSIX: SIGTERM (what `kill` and service
# managers send) and SIGINT (Ctrl-C). Windows: Popen.send_signal(SIGTERM) is
# TerminateProcess, which no program can catch, and SIGINT cannot be sent at all; the one
# catchable stop is Ctrl-Break (SIGBREAK in the child), sent to a child started in its own
# process group.
if sys.platform == "win32":
    CATCHABLE_STOPS: tuple[int, ...] = (signal.CTRL_BREAK_EVENT,)
    OWN_GROUP: dict[str, Any] = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
else:
    CATCHABLE_STOPS = (signal.SIGTERM, signal.SIGINT)
    OWN_GROUP = {}
