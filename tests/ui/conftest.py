"""Fixtures of the desktop-app tests. Qt is imported lazily: without PySide6 these tests skip
(each module starts with ``pytest.importorskip``) and the rest of the suite still runs."""

from __future__ import annotations

from pathlib import Path

import pytest

LOOPBACK = ("127.0.0.1",)


@pytest.fixture
def ui_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private COMPUTESHARE_HOME per test: its own settings.json and keys."""
    home = tmp_path / "home"
    monkeypatch.setenv("COMPUTESHARE_HOME", str(home))
    return home


@pytest.fixture
def app_config():
    """The app on loopback only: mDNS browse/advertise and the hub's sockets."""
    from computeshare_desktop.service.options import AppConfig

    return AppConfig(interfaces=LOOPBACK, bind="127.0.0.1")


@pytest.fixture
def styled_app(qapp):
    """pytest-qt's QApplication with the app's name, icon and style sheet."""
    from computeshare_desktop.gui.app import make_app

    return make_app([])


@pytest.fixture
def main_window(qtbot, styled_app, ui_home, app_config):
    """A shown MainWindow on loopback; closed (and every thread joined) after the test."""
    from computeshare_desktop.gui.main_window import MainWindow
    from computeshare_desktop.gui.settings import Settings

    settings = Settings()
    settings.set_confirm_stop(False)  # tests that want the question turn it on
    window = MainWindow(settings, app_config)
    window.show()
    qtbot.waitExposed(window)
    yield window
    settings.set_confirm_stop(False)  # a failed test must not leave a question to hang on
    window.close()

