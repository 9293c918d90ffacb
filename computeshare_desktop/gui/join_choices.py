"""The Join dialog's "This machine" fields: how much of itself a worker shares.

CPU threads, the most samples per second, and the pause on battery power: the widgets,
labels, bounds and defaults come from JoinOptions (``computeshare join --threads /
--max-rate / --no-pause-on-battery``), so the dialog and the command line cannot drift.
The values a worker joined with are remembered in the settings file: the next Join dialog,
in this run of the app or the next, offers them again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtWidgets import QFormLayout, QWidget

from .. import schema
from ..errors import ConfigError
from ..join_options import JoinOptions
from .fields import Editor
from .settings import Settings

CHOICES = ("threads", "max_rate", "cache_size", "pause_on_battery")  # JoinOptions shown


class WorkerChoices(QWidget):
    """Threads, speed limit and pause-on-battery, as a form; ``values()`` for JoinService."""

    def __init__(self, parent: QWidget | None = None,
                 settings: Settings | None = None) -> None:
        """``settings``: where the last choices are kept (default: the user's file)."""
        super().__init__(parent)
        self.settings = settings or Settings()
        kinds = schema.types(JoinOptions)
        last = self.settings.worker_choices(CHOICES)
        self.editors = {name: Editor(schema.spec(JoinOptions, name), kinds[name],
                                     last.get(name, schema.default(JoinOptions, name, "app")))
                        for name in CHOICES}
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        for name, editor in self.editors.items():
            if kinds[name] is bool:  # a check box says what it is itself
                form.addRow("", editor.widget)
            else:
                form.addRow(editor.option.label, editor.widget)

    @property
    def threads(self) -> Any:
        return self.editors["threads"].widget

    @property
    def max_rate(self) -> Any:
        return self.editors["max_rate"].widget

    @property
    def pause_on_battery(self) -> Any:
        return self.editors["pause_on_battery"].widget

    def set_enabled(self, enabled: bool) -> None:
        """Editable while the dialog is not pairing."""
        for editor in self.editors.values():
            editor.widget.setEnabled(enabled)

    def values(self) -> dict[str, Any]:
        """The chosen values, as JoinService.choose takes them; remembered (the Join dialog
        asks for them as it joins) for the next dialog to offer. ConfigError, in the
        dialog's words (``in_words``), on one the schema refuses: nothing is remembered."""
        chosen = {name: editor.value() for name, editor in self.editors.items()}
        try:
            schema.check(dataclasses.replace(JoinOptions(), **chosen))
        except ConfigError as exc:
            raise ConfigError(self.in_words(str(exc))) from exc
        self.remember(chosen)
        return chosen

    def in_words(self, text: str) -> str:
        """A refusal of one of these values naming its field, not its command-line flag."""
        for editor in self.editors.values():
            flag = editor.option.flag
            if flag and flag in text:
                text = text.replace(flag, f"“{editor.option.label}”")
        return text[:1].upper() + text[1:]

    def remember(self, chosen: dict[str, Any]) -> None:
        """Keep ``chosen`` in the settings file."""
        self.settings.remember_worker_choices(chosen)
        self.settings.save()
