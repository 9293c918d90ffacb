"""Recent sessions as a table: name, the model's file name (never its folders), data, round
of total, state and a date people read; five rows high; a session that runs now (its folder
locked by another process) reads Running with Resume disabled, and Stopped once it ends."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.gui.recent_sessions import (ROWS_SHOWN, RecentSessions,  # noqa: E402
                                                      when_text)
from helpers.ui import click  # noqa: E402
from helpers.sessions import stopped  # noqa: E402

HOLD = textwrap.dedent("""
    import sys, time
    from computeshare_desktop.hub.folder_lock import FolderLock
    FolderLock.take(sys.argv[1], port=7272)
    print("held", flush=True)
    time.sleep(120)
""")


def test_when_reads_as_a_date():
    now = time.mktime((2026, 12, 7, 15, 0, 0, 0, 0, -1))
    at = lambda *t: time.mktime((*t, 0, 0, -1))  # noqa: E731
    assert when_text(at(2026, 12, 7, 14, 2, 0), now) == "today 14:02"
    assert when_text(at(2026, 12, 6, 9, 15, 0), now) == "yesterday 09:15"
    assert when_text(at(2026, 12, 3, 9, 15, 0), now) == "3 Dec 09:15"
    assert when_text(at(2025, 12, 3, 9, 15, 0), now) == "3 Dec 2025"


def test_running_stopped_and_the_model_file_name(qtbot, tmp_path):
    recent = RecentSessions()
    qtbot.addWidget(recent)
    live, other = stopped(tmp_path / "live"), stopped(tmp_path / "other")
    child = subprocess.Popen([sys.executable, "-c", HOLD, live], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        recent.show_folders([live, other])
        recent.resize(600, 400)
        recent.show()
        first, second = recent.row(0), recent.row(1)
        assert (first.round, first.state, first.when[:5]) == ("72 of 300", "Running", "today")
        assert f"process {child.pid}, port 7272" in first.note
        recent.table.selectRow(0)
        assert not recent.resume_button.isEnabled()
        recent.table.selectRow(1)
        assert second.state == "Stopped" and recent.resume_button.isEnabled()
        assert recent.table.height() >= recent.rows_height(ROWS_SHOWN)
        child.kill()
        child.wait(10)
        recent.table.selectRow(0)
        qtbot.waitUntil(lambda: recent.row(0).state == "Stopped", timeout=5_000)
        recent.table.selectRow(0)
        assert recent.resume_button.isEnabled()
        asked: list[str] = []
        recent.resume_requested.connect(asked.append)
        click(qtbot, recent.resume_button)
        assert asked == [live]
    finally:
        child.kill()
        child.wait()
