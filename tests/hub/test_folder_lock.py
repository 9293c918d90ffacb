"""One session per output folder (hub/folder_lock.py): the lock is the OS's, held by an open
file, so a second holder is refused naming the first's PID and port, a probe takes nothing,
and a process killed with SIGKILL leaves the folder free at once."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from computeshare_desktop.errors import ExitCode, FolderInUseError
from computeshare_desktop.hub.folder_lock import LOCK_FILE, FolderLock, Holder, holder
from computeshare_desktop.service.options import check_output_folder

CHILD = textwrap.dedent("""
    import sys, time
    from computeshare_desktop.hub.folder_lock import FolderLock
    lock = FolderLock.take(sys.argv[1], port=int(sys.argv[2]))
    print("held", flush=True)
    time.sleep(120)
""")


def hold_in_child(folder, port):
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder), str(port)],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


def test_a_second_take_is_refused_with_pid_and_port_until_released(tmp_path):
    lock = FolderLock.take(tmp_path)
    lock.record(7070)
    with pytest.raises(FolderInUseError) as info:
        FolderLock.take(tmp_path)  # another open file in this very process: refused too
    assert info.value.exit_code is ExitCode.FOLDER_IN_USE
    assert f"process {os.getpid()}, port 7070" in str(info.value)
    assert holder(tmp_path).pid == os.getpid()
    lock.release()
    assert holder(tmp_path) is None
    FolderLock.take(tmp_path).release()  # free again at once
    assert not (tmp_path / LOCK_FILE).exists()  # the holder removes it as it lets go
    made = tmp_path / "new"
    FolderLock.take(made).release()
    assert not made.exists()  # a folder the lock made, left empty, goes too


def test_a_probe_creates_nothing_and_holds_nothing(tmp_path):
    assert holder(tmp_path) is None
    assert not (tmp_path / LOCK_FILE).exists()
    FolderLock.take(tmp_path).release()
    for _ in range(50):
        assert holder(tmp_path) is None
    FolderLock.take(tmp_path).release()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_holder_leaves_no_lock(tmp_path):
    child = hold_in_child(tmp_path, 7171)
    try:
        seen = holder(tmp_path)
        assert seen is not None and (seen.pid, seen.port) == (child.pid, 7171)
        with pytest.raises(FolderInUseError, match=f"process {child.pid}, port 7171"):
            check_output_folder(tmp_path, resume=False)  # a plain host --out, refused too
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    finally:
        child.kill()
        child.wait()
    assert holder(tmp_path) is None
    FolderLock.take(tmp_path).release()


def write_lock(folder, content: bytes) -> None:
    with open(folder / LOCK_FILE, "r+b") as fh:  # over what the holder wrote
        fh.write(content.ljust(64))


def test_what_the_lock_file_says_decodes_and_a_damaged_one_is_said_once(tmp_path, caplog):
    lock = FolderLock.take(tmp_path, port=7070)
    try:
        assert holder(tmp_path) == Holder(os.getpid(), 7070)
        write_lock(tmp_path, json.dumps({"pid": 4321, "port": None}).encode())  # as before
        assert holder(tmp_path) == Holder(4321, None)
        write_lock(tmp_path, b"")  # taken this instant, not written yet: nothing to say
        with caplog.at_level(logging.WARNING):
            assert holder(tmp_path) == Holder(0, None)
        assert not caplog.records
        for content, said in [(b'{"pid": "me", "port": 7070}', "Expected `int`, got `str`"
                                                                 " - at `$.pid`"),
                              (b'{"pid": 0}', "Expected `int` >= 1 - at `$.pid`"),
                              (b'{"pid": 12, "port": "x"}', "at `$.port`")]:
            write_lock(tmp_path, content)
            caplog.clear()
            with caplog.at_level(logging.WARNING):
                assert holder(tmp_path) == Holder(0, None)
                with pytest.raises(FolderInUseError, match="process 0"):
                    FolderLock.take(tmp_path)
            [record] = caplog.records  # once, however often it is read
            assert said in record.getMessage() and LOCK_FILE in record.getMessage()
        assert not list(tmp_path.glob("*.damaged-*"))  # the holder's file: no copy
    finally:
        lock.release()
    assert holder(tmp_path) is None
