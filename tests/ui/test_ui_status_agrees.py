"""The main window's status bar and its centre say the same while no session is found."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")


def test_no_session_found_reads_looking_in_both_places(qtbot, main_window):
    main_window._show_sessions([])  # what the discovery feed hands over when nothing is seen
    assert main_window.empty_label.text().startswith("Looking for sessions")
    assert main_window.statusBar().currentMessage().startswith("Looking for sessions")
    assert "0 sessions" not in main_window.statusBar().currentMessage()
