"""The command line's console on every OS: NUL is no terminal, and any name prints."""

from __future__ import annotations

import io
import os
import sys

import pytest

from computeshare_desktop.cli import fast
from computeshare_desktop.cli.terminal import is_terminal, make_printable
from computeshare_desktop.errors import HubUnreachableError


def test_the_null_device_a_pipe_and_nothing_are_not_terminals():
    """On Windows this is the case isatty() gets wrong (bpo-28654)."""
    read_end, write_end = os.pipe()
    with open(os.devnull, encoding="utf-8") as null, os.fdopen(read_end) as pipe, \
            os.fdopen(write_end, "w"):
        assert not is_terminal(null) and not is_terminal(pipe)
    assert not is_terminal(None) and not is_terminal(io.StringIO())


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal (POSIX)")
def test_a_pseudo_terminal_is_one():
    import pty

    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, closefd=False) as stream:
            assert is_terminal(stream)
    finally:
        os.close(leader)
        os.close(follower)


def cp1252_stream() -> io.TextIOWrapper:
    """What a Windows pipe or redirect looks like to Python."""
    return io.TextIOWrapper(io.BytesIO(), encoding="cp1252", write_through=True)


def test_a_name_the_code_page_lacks_prints_as_an_escape():
    stream = cp1252_stream()
    with pytest.raises(UnicodeEncodeError):
        stream.write("worker 名前 → ready")
    make_printable(stream)
    stream.write("worker 名前 → ready — ×2\n")
    assert stream.buffer.getvalue() == "worker \\u540d\\u524d \\u2192 ready — ×2\n".encode(
        "cp1252")


def test_utf8_and_missing_streams_are_left_alone():
    utf8 = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    make_printable(utf8)
    make_printable(None)  # pythonw, a windowed bundle: no console at all
    assert utf8.errors == "strict"


def test_the_command_line_prints_any_name_on_a_code_page_stream(monkeypatch):
    def unreachable(host, port, *args, **kwargs):
        raise HubUnreachableError(f"the name {host!r} was not found")

    stderr = cp1252_stream()
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(fast, "probe_hub", unreachable)
    assert fast.main(["join", "名前.lan:7341"]) == fast.UNREACHABLE
    assert b"'\\u540d\\u524d.lan' was not found" in stderr.buffer.getvalue()
