"""On Linux, the app loads Qt's xcb plugin itself before QApplication (which aborts when it
cannot) and names the apt and dnf packages to install (``gui.qt_platform``; a fake library
loader stands in for a system without them)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from computeshare_desktop.gui import qt_platform
from computeshare_desktop.gui.qt_platform import XCB_LIBRARIES, check_xcb

X11 = {"DISPLAY": ":0"}


def loader(missing: set[str], plugin_error: str = ""):
    """A dlopen that fails for ``missing`` names, and for the plugin with ``plugin_error``."""
    loaded: list[str] = []

    def load(name: str) -> None:
        loaded.append(name)
        if name.endswith("libqxcb.so") and plugin_error:
            raise OSError(plugin_error)
        if name in missing:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    load.loaded = loaded  # type: ignore[attr-defined]
    return load


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    path = tmp_path / "platforms" / "libqxcb.so"
    path.parent.mkdir()
    path.write_bytes(b"not really a plugin")
    return path


def test_a_plugin_that_loads_says_nothing(plugin):
    load = loader(set())
    assert check_xcb(X11, system="linux", plugin=plugin, load=load).message is None
    assert load.loaded == [str(plugin)]  # the plugin alone: no library-by-library probe


def test_a_missing_xcb_cursor_names_the_apt_and_dnf_packages(plugin):
    error = "libxcb-cursor.so.0: cannot open shared object file: No such file or directory"
    check = check_xcb(X11, system="linux", plugin=plugin,
                      load=loader({"libxcb-cursor.so.0", "libxcb-icccm.so.4"}, error))
    assert check.fatal and not check.use_wayland
    text = check.message or ""
    assert "libxcb-cursor.so.0, libxcb-icccm.so.4" in text
    assert "sudo apt install libxcb-cursor0 libxcb-icccm4\n" in text
    assert "sudo dnf install xcb-util-cursor xcb-util-wm\n" in text
    assert error in text


def test_an_unnamed_failure_lists_every_package(plugin):
    check = check_xcb(X11, system="linux", plugin=plugin,
                      load=loader(set(), "undefined symbol: xcb_foo"))
    text = check.message or ""
    assert check.fatal and "undefined symbol: xcb_foo" in text
    apt = re.search(r"sudo apt install (.*)", text)
    assert apt is not None and "libxcb-cursor0" in apt.group(1).split()
    assert len(apt.group(1).split()) == len({a for a, _ in XCB_LIBRARIES.values()})


def test_other_platforms_and_systems_are_not_checked(plugin):
    load = loader(set(), "would fail")
    for env, system in (({"QT_QPA_PLATFORM": "offscreen"}, "linux"),
                        ({"QT_QPA_PLATFORM": "wayland"}, "linux"), (X11, "darwin"),
                        (X11, "win32")):
        assert check_xcb(env, system=system, plugin=plugin, load=load).message is None
    assert load.loaded == []
    assert check_xcb({"QT_QPA_PLATFORM": "xcb;wayland"}, system="linux", plugin=plugin,
                     load=load).fatal


def test_a_wayland_session_goes_on_with_wayland(plugin):
    check = check_xcb({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, system="linux",
                      plugin=plugin, load=loader({"libxcb-cursor.so.0"}, "no cursor"))
    assert not check.fatal and check.use_wayland and "libxcb-cursor0" in (check.message or "")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's dlopen")
def test_the_real_loader_refuses_a_broken_plugin(plugin):
    check = check_xcb(X11, system="linux", plugin=plugin)  # ctypes.CDLL for real
    assert check.fatal and "sudo apt install" in (check.message or "")
    real = qt_platform.xcb_plugin()
    if real is not None and real.exists():  # this machine's own PySide6: the plugin loads
        assert check_xcb(X11, system="linux").message is None


def test_the_app_exits_with_the_hint_before_qt_starts(monkeypatch, capsys, plugin):
    """A loader that cannot find libxcb-cursor: the hint on stderr, exit code 2, and no
    QApplication (Qt would have aborted the process)."""
    pytest.importorskip("PySide6")
    from computeshare_desktop.gui import app
    from computeshare_desktop.service.options import AppConfig

    def fake_check(env=None, **kwargs):
        return check_xcb(X11, system="linux", plugin=plugin, load=loader(
            {"libxcb-cursor.so.0"}, "libxcb-cursor.so.0: cannot open shared object file"))

    def no_qt(argv):
        raise AssertionError("QApplication was created")

    monkeypatch.setattr(app, "check_xcb", fake_check)
    monkeypatch.setattr(app, "make_app", no_qt)
    assert app.run_window(["computeshare-desktop"], AppConfig()) == 2
    err = capsys.readouterr().err
    assert err.startswith("computeshare-desktop: Qt's X11 platform plugin (xcb) cannot load")
    assert "sudo apt install libxcb-cursor0\n" in err and "sudo dnf install xcb-util-cursor" in err


def test_the_install_page_lists_every_package():
    page = (Path(__file__).resolve().parents[2] / "docs" / "install.md").read_text(
        encoding="utf-8")
    lines = {line.split(" install ")[0]: line.split(" install ")[1].split()
             for line in page.splitlines() if line.startswith(("sudo apt install ",
                                                               "sudo dnf install "))}
    assert set(lines["sudo apt"]) == {apt for apt, _ in XCB_LIBRARIES.values()}
    assert set(lines["sudo dnf"]) == {dnf for _, dnf in XCB_LIBRARIES.values()}
