"""Numbers that must not mislead: "Devices busy" counts only devices that
work, and says "—" when none does (every worker paused, removed or stopped)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.events import WorkerInfo, WorkerJoined, WorkerLeft  # noqa: E402
from computeshare_desktop.service import Tagged  # noqa: E402
from helpers.clock import Clock  # noqa: E402
from helpers.windows import LAPTOP, a_round, laptop_hub_window  # noqa: E402


@pytest.mark.parametrize("reason", ["paused", "kicked", "silent"])
def test_devices_busy_counts_only_working_devices(qtbot, reason):
    clock = Clock()
    window = laptop_hub_window(qtbot, clock)  # one worker, 8 rounds at 50% busy
    busy = window.cards["busy"].value
    assert busy.text() == "50%"
    window.runner.script = [Tagged("hub", WorkerLeft(LAPTOP, reason))]
    clock.now += 1
    window.refresh()
    assert busy.text() == "—"  # nobody works: no "50%" left over from the last round
    back = WorkerInfo(2, "desk · CPU", "CPU", 0, key="k-desk")
    window.runner.script = [Tagged("hub", WorkerJoined(back)), a_round(9, 2.0, worker=back)]
    window.refresh()
    assert busy.text() == "50%"
    window.confirmed = True
    window.close()


def test_a_stopped_sessions_devices_are_not_busy(qtbot):
    window = laptop_hub_window(qtbot, Clock())
    window.confirmed = True
    window.stop_session()
    window.refresh()
    assert window.cards["busy"].value.text() == "—"
    window.close()
