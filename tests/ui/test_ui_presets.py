"""The Host dialog's network choice: presets in plain words, an advanced override, both
remembered; and the progress state's share, busy and bytes-per-round figures."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.events import ModeChanged, RoundClosed, WorkerInfo  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from computeshare_desktop.gui.progress_state import ProgressState  # noqa: E402
from computeshare_desktop.gui.settings import Settings  # noqa: E402
from computeshare_desktop.service import Tagged  # noqa: E402


def choose(dialog: HostDialog, preset: str) -> None:
    dialog.preset.setCurrentIndex(dialog.preset.findData(preset))


def test_presets_in_plain_words_map_to_codec_and_local_steps(qtbot, ui_home) -> None:
    dialog = HostDialog(HostOptions(out_dir="/tmp/x"))
    qtbot.addWidget(dialog)
    labels = [dialog.preset.itemText(i) for i in range(dialog.preset.count())]
    assert labels == ["Automatic (measure the link)", "Fast LAN", "Wi-Fi", "Slow link"]
    config = dialog.options().config()
    assert (config.preset, config.codec, config.local_steps) == ("auto", "zstd", 0)
    assert "measures the first rounds" in dialog.preset_note.text()

    choose(dialog, "slow")  # the advanced fields show what the preset means
    assert (dialog.codec.currentText(), dialog.local_steps.value()) == ("topk", 8)
    assert dialog.topk.isEnabled() and not dialog.advanced.isChecked()
    assert "local steps" in dialog.preset_note.text()
    config = dialog.options().config()
    assert (config.preset, config.codec, config.topk, config.local_steps) == \
        ("slow", "topk", 0.01, 8)

    choose(dialog, "wifi")
    assert dialog.codec.currentText() == "int8" and not dialog.topk.isEnabled()
    assert dialog.options().config().codec == "int8"


def test_the_advanced_override_wins_and_is_remembered(qtbot, ui_home) -> None:
    dialog = HostDialog(HostOptions(out_dir="/tmp/x"))
    qtbot.addWidget(dialog)
    choose(dialog, "slow")
    dialog.advanced.setChecked(True)
    dialog.codec.setCurrentText("int8")
    dialog.local_steps.setValue(2)
    choose(dialog, "lan")  # a preset change leaves the overridden fields alone
    assert (dialog.codec.currentText(), dialog.local_steps.value()) == ("int8", 2)
    config = dialog.options().config()
    assert (config.preset, config.codec, config.local_steps) == ("lan", "int8", 2)

    settings = Settings()
    settings.remember_host(dialog.options())
    settings.save()
    again = Settings().host_options()
    assert (again.preset, again.advanced, again.codec, again.local_steps) == \
        ("lan", True, "int8", 2)
    reopened = HostDialog(again)
    qtbot.addWidget(reopened)
    assert reopened.advanced.isChecked() and reopened.codec.currentText() == "int8"
    assert reopened.preset.currentData() == "lan"


def test_progress_state_keeps_shares_busy_and_bytes_per_round() -> None:
    state = ProgressState("hub", total_rounds=100, expected_workers=2)
    workers = tuple(WorkerInfo(i, f"w{i}", "CPU", i - 1, 1, 0, 32, True, 0.1, 16 * i, 0.4 * i)
                    for i in (1, 2))
    for version in (1, 2, 3):
        state.apply([Tagged("hub", RoundClosed(
            round=version, version=version, steps=1, loss=1.0, contributors=2, rejected=0,
            bytes_in=40_000 + version, bytes_out=50_000, payload_bytes=90_000, samples=48,
            seconds=0.1, complete=True, compute_s=0.08, busy=0.6, workers=workers))])
    assert state.bytes_per_round() == 90_002
    assert state.busy == 0.6
    assert [(w.share, w.busy) for w in state.workers.values()] == [(16, 0.4), (32, 0.8)]
    state.apply([Tagged("hub", ModeChanged("slow", "topk", 0.01, 8, 0.005, 0.02, 1e7))])
    assert any("Slow" in line or "slow" in line for line in state.take_log())
