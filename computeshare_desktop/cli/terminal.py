"""The console the command line talks to, alike on Linux, macOS and Windows. No torch, no zmq.

Two Windows surprises handled here: ``isatty()`` is True for the null device NUL, and text
written to a pipe or a file uses the ANSI code page (cp1252 and the like), which cannot
spell most of Unicode.
"""

from __future__ import annotations

import codecs
import sys
from typing import IO, Any, TextIO


def is_terminal(stream: IO[Any] | None) -> bool:
    """True when ``stream`` is an interactive terminal that a person can type into.

    On Windows ``isatty()`` alone also says True for NUL, a character device like the
    console (bpo-28654): a worker started with ``< NUL`` would wait for a PIN typed on a
    console. There the console itself is asked (GetConsoleMode fails for anything else).
    """
    try:
        if stream is None or not stream.isatty():
            return False
        fileno = stream.fileno()
    except (AttributeError, OSError, ValueError):  # closed, or not backed by a descriptor
        return False
    if sys.platform == "win32":
        return _windows_console(fileno)
    return True


if sys.platform == "win32":  # a block mypy understands: checked only for Windows
    def _windows_console(fileno: int) -> bool:
        import ctypes
        import msvcrt
        from ctypes import wintypes

        kernel32 = ctypes.WinDLL("kernel32")
        kernel32.GetConsoleMode.argtypes = [wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD)]
        kernel32.GetConsoleMode.restype = wintypes.BOOL
        mode = wintypes.DWORD()
        try:
            handle = msvcrt.get_osfhandle(fileno)
        except OSError:
            return False
        return bool(kernel32.GetConsoleMode(handle, ctypes.byref(mode)))


def make_printable(stream: TextIO | None) -> None:
    """Let ``stream`` print any text: a character its encoding lacks becomes an escape
    (``\\u540d``) instead of a UnicodeEncodeError that would end the command. Session,
    worker and host names can hold any character; a Windows pipe or redirect encodes in
    cp1252. A UTF-8 stream, or one that already tolerates errors, is left alone."""
    if stream is None or getattr(stream, "errors", "strict") != "strict":
        return
    try:
        if codecs.lookup(stream.encoding).name == "utf-8":
            return
    except (AttributeError, LookupError, TypeError):
        pass
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
