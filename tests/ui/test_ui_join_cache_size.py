"""The Join dialog offers the disk cache's size (``join --cache-size``): it reaches the
worker's plan, comes back in the next dialog, and a size the schema refuses is said in the
dialog's words (its field's name, never the flag), with nothing started or remembered."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from computeshare_desktop.service import JoinService  # noqa: E402
from helpers.app import join_dialog, shown  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402


def test_the_cache_size_is_a_join_dialog_field(qtbot, ui_home):
    started: list[JoinService] = []
    dialog = join_dialog(qtbot, started)
    field = dialog.choices.editors["cache_size"]
    assert field.option.label == "Disk cache" and shown(dialog)["cache_size"] == "2GB"
    type_into(qtbot, dialog.pin_edit, "123456")
    type_into(qtbot, field.widget, "lots")
    click(qtbot, dialog.join_button)
    said = dialog.message.text()
    assert not started and "“Disk cache” takes a size" in said and "--" not in said
    assert shown(join_dialog(qtbot, []))["cache_size"] == "2GB"  # nothing remembered

    type_into(qtbot, field.widget, "500MB")
    click(qtbot, dialog.join_button)
    assert started and started[0].plan.options.cache_size == "500MB"
    assert shown(join_dialog(qtbot, []))["cache_size"] == "500MB"
