"""The Host dialog's labels: every preset's note keeps its capitals
("Wi-Fi or 100 Mbit/s"), and no button's label clips ("Download…" read "ownload." in a dialog
squeezed below its layout's minimum), pressed or not."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop.text import sentence  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.hub.presets import PRESETS  # noqa: E402
from computeshare_desktop.service.options import HostOptions  # noqa: E402
from helpers.ui import buttons_clipped  # noqa: E402


@pytest.fixture
def dialog(qtbot, styled_app):
    dialog = HostDialog(HostOptions())
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    return dialog


def test_every_presets_note_keeps_its_capitals(dialog):
    seen = set()
    for index in range(dialog.preset.count()):
        name = dialog.preset.itemData(index)
        dialog.preset.setCurrentIndex(index)
        if name in PRESETS:
            assert dialog.preset_note.text() == sentence(PRESETS[name].summary)
            seen.add(name)
    assert seen == set(PRESETS)
    dialog.preset.setCurrentIndex(dialog.preset.findData("wifi"))
    assert dialog.preset_note.text().startswith("Wi-Fi or 100 Mbit/s")


def test_no_button_label_clips_pressed_or_not(dialog, qtbot):
    index = dialog.dataset.findData("cifar10")
    dialog.dataset.setCurrentIndex(index)
    button = dialog.download_button
    if not button.isVisibleTo(dialog):
        pytest.skip("cifar10 is on this computer: no Download… to show")
    qtbot.wait(20)
    assert buttons_clipped(dialog) == []
    button.setDown(True)
    qtbot.wait(20)
    assert button.width() >= button.sizeHint().width() and buttons_clipped(dialog) == []
    button.setDown(False)
