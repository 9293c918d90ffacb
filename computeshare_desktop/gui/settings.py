"""The app's remembered settings: a small, versioned JSON file per user. No Qt.

``{"version": 1, "host": {...last Host dialog values...}, "join": {...the Join dialog's
worker choices...}, "window": {"geometry": "..."}}`` lives in
``platformdirs.user_config_dir("computeshare")``, or under ``COMPUTESHARE_HOME`` when that is
set (tests, portable installs). A missing, corrupt or newer file is never an error: the app
starts with defaults and says so in the log (a damaged one is kept beside it, see
``stored.read_stored``). Several ``Settings`` of one file may be open
(the main window's, each Join dialog's): each saves the sections it changed over the file as
it is then, never another's older copy of the rest.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import platformdirs

from .. import schema
from ..defaults import HOME_ENV
from ..errors import ConfigError
from ..files import atomic_write
from ..join_options import JoinOptions
from ..service.options import HostOptions
from ..stored import read_stored, stored_bytes

log = logging.getLogger(__name__)

SETTINGS_VERSION = 1
SETTINGS_FILE = "settings.json"
MAX_RECENT = 10  # recent sessions listed in the main window


def settings_path() -> Path:
    """Where the settings file lives."""
    override = os.environ.get(HOME_ENV)
    base = Path(override) if override else Path(platformdirs.user_config_dir("computeshare",
                                                                            appauthor=False))
    return base / SETTINGS_FILE


class Window(msgspec.Struct):
    """The main window's section."""

    geometry: str | None = None  # base64 of Qt's saveGeometry


class SettingsFile(msgspec.Struct):
    """settings.json. ``host`` and ``join`` hold the dialogs' options by name, each read
    back only while it still fits its option (``schema.restore``, ``fitting``): options
    come and go between versions."""

    version: int = SETTINGS_VERSION
    host: dict[str, Any] = {}  # the options the schema marks saved, and "out_parent"
    join: dict[str, Any] = {}  # the Join dialog's worker choices
    window: Window = msgspec.field(default_factory=Window)
    recent: list[str] = []  # output folders, newest first
    confirm_stop: bool = True


class Settings:
    """Loads once, saves on demand."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or settings_path()
        self.stored = self._load()
        self._changed: set[str] = set()  # the sections this object wrote since loading

    def _load(self) -> SettingsFile:
        data = read_stored(self.path, SettingsFile, SettingsFile())
        if data.version != SETTINGS_VERSION:
            log.warning("ignoring settings %s: unknown format version", self.path)
            return SettingsFile()
        return data

    def save(self) -> None:
        """Write atomically; a failure is logged, never raised (settings are a convenience)."""
        on_disk = self._load()  # what another Settings of this file saved meanwhile
        self.stored = msgspec.structs.replace(
            on_disk, **{name: getattr(self.stored, name) for name in self._changed})
        self._changed.clear()
        try:
            atomic_write(self.path, stored_bytes(self.stored))
        except OSError as exc:
            log.warning("could not save settings to %s: %s", self.path, exc)

    # ----------------------------------------------------------------- host dialog
    def host_options(self) -> HostOptions:
        """The last Host dialog values (defaults for anything missing or invalid); the
        options kept are those the schema marks ``saved``."""
        return HostOptions(**schema.restore(HostOptions, self.stored.host))

    def output_parent(self) -> str | None:
        """The folder the last run folder was made in, if any."""
        try:
            return msgspec.convert(self.stored.host.get("out_parent"), str | None) or None
        except msgspec.ValidationError:
            return None

    def remember_host(self, options: HostOptions) -> None:
        """Keep the Host dialog values for next time, and the folder among recent sessions."""
        folder = str(Path(options.out_dir).expanduser())
        if not options.resume:  # the folder as its parent: each session gets a fresh one
            self._set("host", {**schema.saved(options), "out_parent": str(Path(folder).parent)})
        recent = [f for f in self.recent_sessions() if f != folder]
        self._set("recent", [folder, *recent][:MAX_RECENT])

    def recent_sessions(self) -> list[str]:
        """Output folders of the sessions hosted here, newest first."""
        return list(self.stored.recent)

    # ----------------------------------------------------------------- behaviour
    def confirm_stop(self) -> bool:
        """Ask before stopping, leaving, closing or quitting while a session trains."""
        return self.stored.confirm_stop

    def set_confirm_stop(self, ask: bool) -> None:
        """Turn the question on or off."""
        self._set("confirm_stop", bool(ask))

    # ----------------------------------------------------------------- window
    def geometry(self) -> str | None:
        """The main window's saved geometry (base64 of Qt's saveGeometry), if any."""
        return self.stored.window.geometry

    def remember_geometry(self, encoded: str) -> None:
        """Keep the main window's geometry."""
        self._set("window", msgspec.structs.replace(self.stored.window, geometry=encoded))

    # ----------------------------------------------------------------- join dialog
    def worker_choices(self, names: Iterable[str]) -> dict[str, Any]:
        """The Join dialog's last values of the JoinOptions ``names`` (threads, speed
        limit...) that still fit their options; one missing or invalid is left out."""
        return fitting(JoinOptions, self.stored.join, names)

    def remember_worker_choices(self, values: Mapping[str, Any]) -> None:
        """Keep the Join dialog's worker choices for the next dialog."""
        self._set("join", {**self.stored.join, **values})

    def _set(self, key: str, value: Any) -> None:
        setattr(self.stored, key, value)
        self._changed.add(key)


def fitting(cls: type, data: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """The values in ``data`` of ``cls``'s options ``names`` that still fit their option
    (type and checks), as ``schema.restore`` keeps an option marked ``saved``."""
    kinds, values = schema.types(cls), {}
    for name in names:
        if name not in data:
            continue
        try:
            value = msgspec.convert(data[name], kinds[name])
            if schema.spec(cls, name).accepts(value):
                values[name] = value
        except (msgspec.ValidationError, ConfigError):
            continue
    return values
