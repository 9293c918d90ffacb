"""Every option round-trips: command line -> config -> settings file -> Host dialog -> config,
through the real parser, a real settings file and the real dialog; the Join dialog's fields
are join's options."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("PySide6")

from computeshare_desktop import schema  # noqa: E402
from computeshare_desktop.cli import commands  # noqa: E402
from computeshare_desktop.cli.main import build_parser  # noqa: E402
from computeshare_desktop.gui.host_dialog import HostDialog  # noqa: E402
from computeshare_desktop.gui.join_dialog import JoinDialog  # noqa: E402
from computeshare_desktop.gui.settings import Settings  # noqa: E402
from computeshare_desktop.join_options import JoinOptions  # noqa: E402
from computeshare_desktop.service.options import HostOptions, JoinTarget  # noqa: E402
from helpers.schema import flag_argv, other_value  # noqa: E402
from helpers.ui import click, type_into  # noqa: E402


@pytest.mark.parametrize("name", list(schema.options(HostOptions)))
def test_every_host_option_round_trips_through_settings_and_the_dialog(name, qtbot, ui_home,
                                                                      tmp_path):
    option = schema.spec(HostOptions, name)
    value = other_value(HostOptions, name, "host", tmp_path)
    if option.flag and "host" in option.commands:  # the command line's options
        options = commands.host_options(build_parser().parse_args(
            ["host", *flag_argv(HostOptions, name, value)]))
    else:  # the app's own (no flag)
        options = dataclasses.replace(HostOptions(), **{name: value})
    assert getattr(options, name) == value
    config = options.config()

    start = options
    if option.saved:
        settings = Settings(tmp_path / "settings.json")
        settings.remember_host(dataclasses.replace(options, out_dir=str(tmp_path / "r" / "1")))
        settings.save()
        start = dataclasses.replace(Settings(tmp_path / "settings.json").host_options(),
                                    out_dir=options.out_dir, pin=options.pin,
                                    train_here=options.train_here)
        assert getattr(start, name) == value

    dialog = HostDialog(start)
    qtbot.addWidget(dialog)
    if option.label:  # the dialog shows it, in the schema's widget
        editor = dialog.editors[name]
        assert editor.value() == value and getattr(dialog, name) is editor.widget
    again = dialog.options()
    assert getattr(again, name) == value
    assert again.config() == config


def test_a_value_typed_into_the_dialog_is_what_the_config_gets(qtbot, ui_home):
    dialog = HostDialog(HostOptions(out_dir=str(ui_home / "run")))
    qtbot.addWidget(dialog)
    dialog.show()
    type_into(qtbot, dialog.rounds, "1234")
    type_into(qtbot, dialog.lr, "0.05")
    config = dialog.options().config()
    assert (config.rounds, config.lr) == (1234, 0.05)
    assert dialog.lr.minimum() == schema.spec(HostOptions, "lr").minimum
    assert dialog.rounds.maximum() == schema.spec(HostOptions, "rounds").maximum
    assert dialog.workers.maximum() == schema.spec(HostOptions, "workers").maximum


def test_the_join_dialogs_fields_are_joins_options(qtbot):
    asked: list[tuple[JoinTarget, str]] = []

    class Runner:
        def start(self) -> "Runner":
            return self

        def drain(self) -> list:
            return []

        def stop(self) -> None:
            pass

    def start_runner(target: JoinTarget, pin: str) -> Runner:
        asked.append((target, pin))
        return Runner()

    dialog = JoinDialog(None, start_runner)  # type: ignore[arg-type]
    qtbot.addWidget(dialog)
    dialog.show()
    for edit, name in ((dialog.address_edit, "address"), (dialog.pin_edit, "pin")):
        option = schema.spec(JoinOptions, name)
        assert (edit.accessibleName(), edit.placeholderText()) == (option.label,
                                                                   option.placeholder)
    type_into(qtbot, dialog.address_edit, "tcp://hub.lan:7400")
    type_into(qtbot, dialog.pin_edit, "428 913")
    click(qtbot, dialog.join_button)
    assert asked == [(JoinTarget.from_address("hub.lan:7400"), "428913")]
    dialog.reject()
