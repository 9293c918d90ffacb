"""The Join dialog remembers how much of this machine a worker shares: the speed limit (and
the threads and the pause on battery) it joined with come back in the next Join dialog, in
the same run of the app or after a restart (a new Settings reading the same file), even when
the main window saves its own older copy of the settings afterwards."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.gui.join_choices import CHOICES  # noqa: E402
from computeshare_desktop.gui.settings import Settings, settings_path  # noqa: E402
from computeshare_desktop.service import JoinService  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402
from helpers.app import join_dialog, shown  # noqa: E402

DEFAULTS = {"threads": 0, "max_rate": 0.0, "cache_size": "2GB", "pause_on_battery": True}


def test_the_speed_limit_a_worker_joined_with_is_offered_again(qtbot, ui_home):
    main_windows = Settings()  # the main window's, loaded as the app started
    started: list[JoinService] = []
    first = join_dialog(qtbot, started)
    assert shown(first) == DEFAULTS
    type_into(qtbot, first.choices.max_rate, "250")
    type_into(qtbot, first.choices.threads, "3")
    click(qtbot, first.choices.pause_on_battery)
    type_into(qtbot, first.pin_edit, "123456")
    click(qtbot, first.join_button)
    assert started and started[0].plan.options.max_rate == 250.0  # joined with it

    again = join_dialog(qtbot, [])  # the next dialog, in this run of the app
    assert shown(again) == {"threads": 3, "max_rate": 250.0, "cache_size": "2GB",
                            "pause_on_battery": False}

    main_windows.remember_geometry("AAAA")  # the main window closes: its older copy saved
    main_windows.save()
    stored = json.loads(settings_path().read_text(encoding="utf-8"))
    assert stored["join"]["max_rate"] == 250.0 and stored["window"]["geometry"] == "AAAA"
    assert Settings().worker_choices(CHOICES)["max_rate"] == 250.0  # the app restarted
    assert shown(join_dialog(qtbot, [])) == {"threads": 3, "max_rate": 250.0,
                                             "cache_size": "2GB", "pause_on_battery": False}


def test_a_cancelled_dialog_keeps_the_last_joined_values(qtbot, ui_home):
    first = join_dialog(qtbot, [])
    type_into(qtbot, first.choices.max_rate, "500")
    type_into(qtbot, first.pin_edit, "123456")
    click(qtbot, first.join_button)
    second = join_dialog(qtbot, [])
    type_into(qtbot, second.choices.max_rate, "100")
    click(qtbot, second.cancel_button)  # tried, not joined: not remembered
    assert shown(join_dialog(qtbot, []))["max_rate"] == 500.0


def test_a_stored_value_that_no_longer_fits_gives_the_default(ui_home):
    settings = Settings()
    settings.remember_worker_choices({"threads": "many", "max_rate": -5.0,
                                      "pause_on_battery": False})
    settings.save()
    assert Settings().worker_choices(CHOICES) == {"pause_on_battery": False}
