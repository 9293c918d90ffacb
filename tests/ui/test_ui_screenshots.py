"""Screenshots a person can look at: main window, the Host dialog's three steps, PIN, Join
dialog and the hub's and a worker's progress windows mid-training. Set
COMPUTESHARE_SCREENSHOTS=docs/screenshots to refresh the documentation's images (otherwise
they go to the test's tmp_path), on a 1280×720 screen as the documentation's are:

    QT_QPA_PLATFORM=offscreen:configfile=tests/ui/screen-1280x720.json \
    COMPUTESHARE_SCREENSHOTS=docs/screenshots python -m pytest tests/ui/test_ui_screenshots.py \
        tests/ui/test_ui_data_preview.py
"""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from helpers.net import free_ports  # noqa: E402
from helpers.ui import click, click_row, image_stats, screenshot_dir, type_into  # noqa: E402

SESSION = "Lab workstation"  # typed with real key presses: ASCII only


def save(widget, folder, name: str) -> None:
    path = folder / f"{name}.png"
    assert widget.grab().save(str(path)), f"could not write {path}"
    width, height, colours = image_stats(path)
    assert width >= 200 and height >= 60, (name, width, height)
    assert colours >= 40, f"{name}.png looks blank ({colours} colours)"


def test_screenshots_of_every_window(qtbot, main_window, tmp_path):
    folder = screenshot_dir(tmp_path)
    main_window.resize(980, 540)
    qtbot.waitUntil(lambda: main_window.device_label.property("probed") is not None)
    save(main_window, folder, "main-window-empty")

    click(qtbot, main_window.host_button)
    host = main_window.host_dialog
    qtbot.waitUntil(host.isVisible)
    type_into(qtbot, host.rounds, "2000")
    type_into(qtbot, host.eval_every, "50")
    type_into(qtbot, host.workers, "2")
    type_into(qtbot, host.name, SESSION)
    type_into(qtbot, host.port, str(free_ports()))
    for step, name in enumerate(("host-dialog", "host-dialog-how", "host-dialog-who")):
        host.steps.setCurrentIndex(step)
        qtbot.wait(50)
        save(host, folder, name)  # with the default run folder, as a user sees it
    type_into(qtbot, host.out_dir, str(tmp_path / "run"))
    click(qtbot, host.start_button)
    hub_window = main_window.progress_windows[0]
    qtbot.waitUntil(lambda: hub_window.state.port is not None, timeout=30_000)
    qtbot.wait(150)  # the next refresh shows how to join under the PIN
    save(hub_window.pin_card, folder, "pin")

    model = main_window.model
    qtbot.waitUntil(lambda: model.row_of_name(SESSION) >= 0, timeout=30_000)
    click_row(qtbot, main_window.sessions_view, model.row_of_name(SESSION), double=True)
    join = main_window.join_dialog
    qtbot.waitUntil(join.isVisible)
    type_into(qtbot, join.pin_edit, hub_window.pin_card.pin)
    save(join, folder, "join-dialog")
    click(qtbot, join.join_button)
    qtbot.waitUntil(lambda: len(main_window.progress_windows) == 2, timeout=20_000)
    worker_window = main_window.progress_windows[1]

    qtbot.waitUntil(lambda: len(hub_window.state.accuracy) >= 4, timeout=90_000)
    qtbot.wait(600)  # one slow refresh: curves and tables up to date
    save(hub_window, folder, "progress-hub")
    save(worker_window, folder, "progress-worker")
    main_window.sessions_view.clearSelection()
    qtbot.waitUntil(lambda: "Training" in str(model.data(model.index(0, 5))), timeout=10_000)
    qtbot.wait(100)  # the layout follows the buttons' new style
    save(main_window, folder, "main-window")
    assert hub_window.state.phase == "training" and worker_window.state.phase == "training"


def test_screenshot_of_a_model_refused_under_its_field(qtbot, main_window, tmp_path):
    from helpers.app import start_with
    from helpers.graph import BRANCHES, flat_net_file

    folder = screenshot_dir(tmp_path)
    dialog = start_with(qtbot, main_window, tmp_path, flat_net_file(tmp_path, BRANCHES))
    qtbot.waitUntil(dialog.messages["model"].isVisible)
    qtbot.wait(100)  # scrolled to the message, painted
    assert main_window.progress_windows == []
    save(dialog, folder, "host-dialog-refused")
