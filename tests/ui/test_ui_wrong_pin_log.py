"""The host's window says a wrong PIN once: the hub's own log line, which the window shows,
not a second line of its own as well."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.events import LogLine, PairingRefused  # noqa: E402
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.service import Tagged  # noqa: E402


def test_a_wrong_pin_is_one_line_in_the_hosts_window() -> None:
    state = ProgressState("hub", total_rounds=10, expected_workers=1)
    state.apply([Tagged("hub", PairingRefused("BAD_PIN", 1, 0.0)),
                 Tagged("hub", LogLine("Wrong PIN from 'vm · CPU' at 127.0.0.1 (1 in a row)"))])
    lines = state.take_log()
    assert [line for line in lines if "PIN" in line or "pairing" in line.lower()] == \
        ["Wrong PIN from 'vm · CPU' at 127.0.0.1 (1 in a row)"]
